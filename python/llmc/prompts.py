"""The prompts LLM.generate and AsyncLLM.generate take, as vLLM takes them: text, token
ids, {"prompt": text} or {"prompt_token_ids": ids}, alone or in a list."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from llmc.sampling_params import SamplingParams
from llmc.tokenizer import Tokenizer


@dataclass
class Prompt:
    text: Optional[str]
    token_ids: list[int]


def _is_token_ids(value) -> bool:
    return isinstance(value, (list, tuple)) and len(value) > 0 and all(
        isinstance(t, int) and not isinstance(t, bool) for t in value)


def _one(value, tokenizer: Optional[Tokenizer]) -> Prompt:
    if isinstance(value, dict):
        if "prompt_token_ids" in value:
            value = list(value["prompt_token_ids"])
        elif "prompt" in value:
            value = value["prompt"]
        else:
            raise ValueError(f"a prompt dict needs 'prompt' or 'prompt_token_ids', got "
                             f"{sorted(value)}")
    if isinstance(value, str):
        if tokenizer is None:
            raise ValueError("this model has no tokenizer: give prompts as token ids")
        return Prompt(value, tokenizer.encode(value))
    if _is_token_ids(value):
        return Prompt(None, list(value))
    raise ValueError(f"a prompt is a string, a non-empty list of token ids or a dict; got "
                     f"{value!r:.80}")


def normalize(prompts, tokenizer: Optional[Tokenizer]) -> list[Prompt]:
    """The prompts of a generate() call, in order (text encoded with the tokenizer's special
    tokens, as vLLM does)."""
    if isinstance(prompts, (str, dict)) or _is_token_ids(prompts):
        return [_one(prompts, tokenizer)]
    if not isinstance(prompts, (list, tuple)):
        raise ValueError(f"prompts must be a prompt or a list of them, got {type(prompts)}")
    return [_one(prompt, tokenizer) for prompt in prompts]


def params_for(sampling_params, count: int) -> list[SamplingParams]:
    """One SamplingParams per prompt: the same for all (None: the defaults) or a list."""
    if sampling_params is None:
        sampling_params = SamplingParams()
    if isinstance(sampling_params, SamplingParams):
        return [sampling_params] * count
    params = list(sampling_params)
    if len(params) != count or not all(isinstance(p, SamplingParams) for p in params):
        raise ValueError(f"sampling_params must be one SamplingParams or a list of {count}")
    return params


def truncated(prompt: Prompt, params: SamplingParams, max_model_len: int) -> Prompt:
    """The prompt with only its last truncate_prompt_tokens tokens (-1: max_model_len), as
    vLLM keeps them; its text stays as given."""
    keep = params.truncate_prompt_tokens
    if keep is None:
        return prompt
    keep = max_model_len if keep == -1 else keep
    return Prompt(prompt.text, prompt.token_ids[-keep:])


def max_tokens(params: SamplingParams, prompt: Prompt, max_model_len: int) -> int:
    """max_tokens, or with None what the model's length leaves after the prompt."""
    if params.max_tokens is not None:
        return params.max_tokens
    return max(max_model_len - len(prompt.token_ids), 1)
