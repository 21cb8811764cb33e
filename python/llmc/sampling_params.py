"""SamplingParams: how each request is sampled and when it stops, with vLLM's names and
defaults. Values out of range raise ValueError when the object is made."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Optional, Union


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass
class StructuredOutputsParams:
    """Constrains every sample's text (vLLM's structured outputs); set exactly one: json (a
    JSON schema, as a dict or text), json_object (any JSON document, as vLLM's), regex, choice (one of
    these strings) or grammar (an EBNF grammar, xgrammar's GBNF: the start rule is root).
    The engine compiles it against the model's vocabulary (xgrammar) and masks the logits;
    what it cannot enforce is refused by name (docs/serving.md, "Structured outputs")."""

    json: Union[None, str, dict] = None
    regex: Optional[str] = None
    choice: Optional[list[str]] = None
    grammar: Optional[str] = None
    json_object: Optional[bool] = None

    def __post_init__(self) -> None:
        given = [name for name in ("json", "regex", "choice", "grammar", "json_object")
                 if getattr(self, name) not in (None, False)]
        _check(len(given) == 1, "structured_outputs needs exactly one of json, regex, choice, "
                                f"grammar and json_object, got {given or 'none'}")
        _check(self.json is None or isinstance(self.json, (str, dict)),
               "structured_outputs.json must be a JSON schema as a dict or text")
        for name in ("regex", "grammar"):
            value = getattr(self, name)
            _check(value is None or (isinstance(value, str) and value),
                   f"structured_outputs.{name} must be a non-empty string")
        _check(self.choice is None or (len(self.choice) > 0 and all(
            isinstance(c, str) for c in self.choice)),
               "structured_outputs.choice must be a non-empty list of strings")

    def spec(self) -> dict:
        """The engine's form of the constraint (runtime/python/ServingBindings.cpp)."""
        if self.json is not None:
            source = self.json if isinstance(self.json, str) else json.dumps(self.json)
            return {"kind": "json_schema", "source": source}
        if self.regex is not None:
            return {"kind": "regex", "source": self.regex}
        if self.choice is not None:
            return {"kind": "choice", "choices": list(self.choice)}
        if self.grammar is not None:
            return {"kind": "ebnf", "source": self.grammar}
        return {"kind": "json_object"}


@dataclass
class SamplingParams:
    """n: samples per prompt. temperature: 0 is greedy. top_p, top_k (0 or -1: all),
    min_p: filters. seed: makes a request's samples reproducible. max_tokens: tokens per
    sample (None: up to the model's max_model_len). stop: strings that end a sample (left
    out of its text unless include_stop_str_in_output). stop_token_ids: tokens that end a
    sample (kept in its token_ids). presence_penalty, frequency_penalty (OpenAI's) and
    repetition_penalty (transformers'). logit_bias: {token id: bias in [-100, 100]} added
    to the logits (OpenAI's). min_tokens: no stop token (end-of-sequence included) or stop
    string ends a sample before this many tokens (vLLM's). allowed_token_ids: only these
    tokens are sampled (vLLM's). skip_special_tokens: leave special tokens' text out of the
    output text (vLLM's; their ids stay in token_ids). truncate_prompt_tokens: keep only
    the prompt's last k tokens (vLLM's; -1: as many as max_model_len). logprobs: return the
    chosen token's logprob and this many most likely ones at each position. prompt_logprobs:
    the same for every prompt token but the first, given the tokens before it (vLLM's; the
    prompt is then computed whole, without the prefix cache). ignore_eos: run
    past the model's end-of-sequence tokens. structured_outputs: a StructuredOutputsParams
    that every sample's text follows."""

    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    seed: Optional[int] = None
    max_tokens: Optional[int] = 16
    stop: Union[None, str, list[str]] = None
    stop_token_ids: Optional[list[int]] = None
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repetition_penalty: float = 1.0
    logit_bias: Optional[dict[int, float]] = None
    min_tokens: int = 0
    allowed_token_ids: Optional[list[int]] = None
    logprobs: Optional[int] = None
    prompt_logprobs: Optional[int] = None
    ignore_eos: bool = False
    include_stop_str_in_output: bool = False
    skip_special_tokens: bool = True
    truncate_prompt_tokens: Optional[int] = None
    structured_outputs: Optional[StructuredOutputsParams] = None
    stop_strings: list[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _check(_is_int(self.n) and self.n >= 1, f"n must be an int >= 1, got {self.n!r}")
        _check(_is_number(self.temperature) and self.temperature >= 0,
               f"temperature must be >= 0, got {self.temperature!r}")
        _check(_is_number(self.top_p) and 0 < self.top_p <= 1,
               f"top_p must be in (0, 1], got {self.top_p!r}")
        _check(_is_int(self.top_k) and (self.top_k >= 0 or self.top_k == -1),
               f"top_k must be -1, 0 (all tokens) or a positive int, got {self.top_k!r}")
        _check(_is_number(self.min_p) and 0 <= self.min_p <= 1,
               f"min_p must be in [0, 1], got {self.min_p!r}")
        _check(self.seed is None or (_is_int(self.seed) and 0 <= self.seed < 2**64),
               f"seed must be None or an int in [0, 2**64), got {self.seed!r}")
        _check(self.max_tokens is None or (_is_int(self.max_tokens) and self.max_tokens >= 1),
               f"max_tokens must be None or an int >= 1, got {self.max_tokens!r}")
        for name in ("presence_penalty", "frequency_penalty"):
            value = getattr(self, name)
            _check(_is_number(value) and -2 <= value <= 2,
                   f"{name} must be in [-2, 2], got {value!r}")
        _check(_is_number(self.repetition_penalty) and self.repetition_penalty > 0,
               f"repetition_penalty must be > 0, got {self.repetition_penalty!r}")
        for name in ("logprobs", "prompt_logprobs"):
            value = getattr(self, name)
            _check(value is None or (_is_int(value) and value >= 0),
                   f"{name} must be None or an int >= 0, got {value!r}")
        bias = dict(self.logit_bias or {})
        _check(all(_is_int(token) and token >= 0 and _is_number(value) and -100 <= value <= 100
                   for token, value in bias.items()),
               f"logit_bias must map token ids to biases in [-100, 100], got {self.logit_bias!r}")
        self.logit_bias = bias
        _check(_is_int(self.min_tokens) and self.min_tokens >= 0,
               f"min_tokens must be an int >= 0, got {self.min_tokens!r}")
        _check(self.allowed_token_ids is None or (
            len(self.allowed_token_ids) > 0
            and all(_is_int(i) and i >= 0 for i in self.allowed_token_ids)),
               f"allowed_token_ids must be None or a non-empty list of token ids, got "
               f"{self.allowed_token_ids!r}")
        _check(self.truncate_prompt_tokens is None or (
            _is_int(self.truncate_prompt_tokens)
            and (self.truncate_prompt_tokens >= 1 or self.truncate_prompt_tokens == -1)),
               f"truncate_prompt_tokens must be None, -1 or an int >= 1, got "
               f"{self.truncate_prompt_tokens!r}")
        _check(isinstance(self.skip_special_tokens, bool),
               f"skip_special_tokens must be a bool, got {self.skip_special_tokens!r}")
        _check(self.max_tokens is None or self.min_tokens <= self.max_tokens,
               f"min_tokens ({self.min_tokens}) must not be more than max_tokens "
               f"({self.max_tokens})")
        stop = [self.stop] if isinstance(self.stop, str) else list(self.stop or [])
        _check(all(isinstance(s, str) and s for s in stop),
               f"stop must be a non-empty string or a list of them, got {self.stop!r}")
        self.stop_strings = stop
        ids = list(self.stop_token_ids or [])
        _check(all(_is_int(i) and i >= 0 for i in ids),
               f"stop_token_ids must be a list of token ids, got {self.stop_token_ids!r}")
        self.stop_token_ids = ids
        _check(self.structured_outputs is None
               or isinstance(self.structured_outputs, StructuredOutputsParams),
               "structured_outputs must be a StructuredOutputsParams")

    def grammar_spec(self) -> Optional[dict]:
        """The constraint in the engine's form, or None."""
        return self.structured_outputs.spec() if self.structured_outputs else None

    def engine_options(self, max_tokens: int, eos_token_ids: list[int]) -> dict:
        """The engine's request options (EngineJson.h's names) for a prompt that may
        generate `max_tokens` tokens at most."""
        options = {"n": self.n, "max_tokens": max_tokens, "temperature": float(self.temperature),
                   "top_p": float(self.top_p), "top_k": self.top_k, "min_p": float(self.min_p),
                   "presence_penalty": float(self.presence_penalty),
                   "frequency_penalty": float(self.frequency_penalty),
                   "repetition_penalty": float(self.repetition_penalty),
                   "stop_token_ids": self.stop_token_ids
                   + ([] if self.ignore_eos else list(eos_token_ids))}
        if self.seed is not None:
            options["seed"] = self.seed
        if self.logprobs is not None:
            options["logprobs"] = self.logprobs
        if self.prompt_logprobs is not None:
            options["prompt_logprobs"] = self.prompt_logprobs
        if self.logit_bias:
            options["logit_bias"] = {str(token): float(bias)
                                     for token, bias in self.logit_bias.items()}
        if self.min_tokens:
            options["min_tokens"] = self.min_tokens
        if self.allowed_token_ids:
            options["allowed_token_ids"] = list(self.allowed_token_ids)
        return options
