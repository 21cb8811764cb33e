"""What generation returns, in vLLM's shapes: RequestOutput holds a prompt and its
CompletionOutputs (one per sample); RequestState builds them from the engine's events. An
embedding model's requests return EmbeddingRequestOutputs, a classifier's
ClassificationRequestOutputs (PoolingState builds both)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Union

from llmc.errors import LlmcRequestError, LlmcRuntimeError
from llmc.sampling_params import SamplingParams


@dataclass
class Logprob:
    """A token's log-probability under the model's distribution, its rank there (1: the
    most likely; 1 + the number of tokens more likely) and its text."""
    logprob: float
    rank: Optional[int] = None
    decoded_token: Optional[str] = None


# Per position, {token id: Logprob} of the token there and the most likely ones.
PositionLogprobs = dict[int, Logprob]


@dataclass
class CompletionOutput:
    """One sample. finish_reason: "stop" (a stop string, a stop token or end of sequence),
    "length" (max_tokens or max_model_len) or "abort"; None while it runs. stop_reason: the
    stop string or token id that ended it. logprobs: one dict {token id: Logprob} per
    generated token, when SamplingParams.logprobs is set (then also cumulative_logprob)."""
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: Optional[float]
    logprobs: Optional[list[PositionLogprobs]]
    finish_reason: Optional[str] = None
    stop_reason: int | str | None = None

    def finished(self) -> bool:
        return self.finish_reason is not None


@dataclass
class RequestOutput:
    """prompt_logprobs, when SamplingParams.prompt_logprobs is set: None for the first
    prompt token, then each token's PositionLogprobs given the tokens before it."""
    request_id: str
    prompt: Optional[str]
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]
    finished: bool
    prompt_logprobs: Optional[list[Optional[PositionLogprobs]]] = field(default=None)


class RequestState:
    """A request in flight: applies its events (llmc._native.LLMEngine.poll) and makes its
    RequestOutput. `decode_token` gives a token's text, for logprobs."""

    def __init__(self, request_id: str, prompt: Optional[str], prompt_token_ids: list[int],
                 params: SamplingParams, decode_token: Callable[[int], str]):
        self.request_id = request_id
        self.prompt = prompt
        self.prompt_token_ids = prompt_token_ids
        self.params = params
        self.decode_token = decode_token
        want_logprobs = params.logprobs is not None
        self.samples = [CompletionOutput(index=i, text="", token_ids=[],
                                         cumulative_logprob=0.0 if want_logprobs else None,
                                         logprobs=[] if want_logprobs else None)
                        for i in range(params.n)]
        self.prompt_logprobs: Optional[list[Optional[PositionLogprobs]]] = \
            [None] if params.prompt_logprobs is not None else None
        self.error: Optional[LlmcRuntimeError] = None

    @property
    def finished(self) -> bool:
        return self.error is not None or all(s.finished() for s in self.samples)

    def apply(self, event: dict) -> None:
        if event["error"]:
            error_type = LlmcRequestError if event["rejected"] else LlmcRuntimeError
            self.error = error_type(event["error"])
            return
        if event["prompt_logprobs"]:  # an event of its own, before the first token's
            for token, logprob, rank, top in event["prompt_logprobs"]:
                self.prompt_logprobs.append(self._logprobs(token, logprob, rank, top))
            return
        sample = self.samples[event["index"]]
        token = event["token"]
        if token is not None:
            sample.token_ids.append(token)
            if sample.logprobs is not None:
                sample.cumulative_logprob += event["logprob"]
                sample.logprobs.append(self._logprobs(token, event["logprob"], event["rank"],
                                                      event["top_logprobs"]))
        sample.text += event["text"]
        if event["finish_reason"] is not None:
            sample.finish_reason = event["finish_reason"]
            if event["stop_string"] is not None:
                sample.stop_reason = event["stop_string"]
                if self.params.include_stop_str_in_output:
                    sample.text += event["stop_string"]
            elif (sample.finish_reason == "stop" and sample.token_ids
                  and sample.token_ids[-1] in self.params.stop_token_ids):
                sample.stop_reason = sample.token_ids[-1]

    def _logprobs(self, token: int, logprob: float, rank: int,
                  top: list[tuple[int, float]]) -> PositionLogprobs:
        """As vLLM orders them: the token at the position, then the most likely ones."""
        entries = {token: Logprob(logprob, rank, self.decode_token(token))}
        for top_rank, (top_token, top_logprob) in enumerate(top, start=1):
            if top_token != token:
                entries[top_token] = Logprob(top_logprob, top_rank,
                                             self.decode_token(top_token))
        return entries

    def output(self) -> RequestOutput:
        """A snapshot: later events do not change it."""
        samples = [CompletionOutput(s.index, s.text, list(s.token_ids), s.cumulative_logprob,
                                    None if s.logprobs is None else list(s.logprobs),
                                    s.finish_reason, s.stop_reason) for s in self.samples]
        prompt_logprobs = None if self.prompt_logprobs is None else list(self.prompt_logprobs)
        return RequestOutput(self.request_id, self.prompt, list(self.prompt_token_ids),
                             samples, self.finished, prompt_logprobs)


@dataclass
class PoolingParams:
    """vLLM's PoolingParams for a pooling model's requests. use_activation (vLLM 0.11's
    name): an embedding scaled to unit L2 norm, a classifier's logits turned into
    probabilities (a softmax over the labels, a sigmoid of one); None takes the default,
    True. normalize is the older vLLM's name of the embedding's switch, used where
    use_activation is None. dimensions: a Matryoshka embedding model's embedding cut to its
    first this many features (then normalised), as vLLM's; other models refuse it."""
    normalize: bool = True
    use_activation: Optional[bool] = None
    dimensions: Optional[int] = None

    def engine_options(self) -> dict:
        activation = bool(self.normalize if self.use_activation is None
                          else self.use_activation)
        pooling = {"normalize": activation, "activation": activation}
        if self.dimensions is not None:
            if not isinstance(self.dimensions, int) or isinstance(self.dimensions, bool):
                raise ValueError(f"dimensions must be an int, got {self.dimensions!r}")
            pooling["dimensions"] = self.dimensions
        return {"pooling": pooling}


@dataclass
class EmbeddingOutput:
    """The prompt's embedding: its last token's final hidden state (hidden_size floats)."""
    embedding: list[float]

    @property
    def hidden_size(self) -> int:
        return len(self.embedding)


@dataclass
class EmbeddingRequestOutput:
    request_id: str
    outputs: EmbeddingOutput
    prompt_token_ids: list[int]
    finished: bool


@dataclass
class ClassificationOutput:
    """The prompt's class probabilities, one per label (its last token's logits of the
    classifier's score head, through the softmax unless use_activation was False)."""
    probs: list[float]

    @property
    def num_classes(self) -> int:
        return len(self.probs)


@dataclass
class ClassificationRequestOutput:
    request_id: str
    outputs: ClassificationOutput
    prompt_token_ids: list[int]
    finished: bool


@dataclass
class ScoringOutput:
    """A pair's score: a cross-encoder's probability that the second text answers the first
    (its logit with use_activation=False), or the cosine of an embedding model's two
    embeddings."""
    score: float


@dataclass
class ScoringRequestOutput:
    request_id: str
    outputs: ScoringOutput
    prompt_token_ids: list[int]
    finished: bool


class PoolingState:
    """A pooling request in flight: its one event carries the pooled row, which becomes an
    EmbeddingRequestOutput or a ClassificationRequestOutput (`classify`)."""

    def __init__(self, request_id: str, prompt_token_ids: list[int], classify: bool = False):
        self.request_id = request_id
        self.prompt_token_ids = prompt_token_ids
        self.classify = classify
        self.pooled: Optional[list[float]] = None
        self.error: Optional[LlmcRuntimeError] = None

    @property
    def finished(self) -> bool:
        return self.error is not None or self.pooled is not None

    def apply(self, event: dict) -> None:
        if event["error"]:
            error_type = LlmcRequestError if event["rejected"] else LlmcRuntimeError
            self.error = error_type(event["error"])
        elif event["pooled"] is not None:
            self.pooled = event["pooled"]
        elif event["finish_reason"] == "abort":
            self.error = LlmcRuntimeError(f"request {self.request_id} was aborted")

    def output(self) -> Union[EmbeddingRequestOutput, ClassificationRequestOutput]:
        if self.classify:
            return ClassificationRequestOutput(self.request_id,
                                               ClassificationOutput(list(self.pooled)),
                                               list(self.prompt_token_ids), True)
        return EmbeddingRequestOutput(self.request_id, EmbeddingOutput(list(self.pooled)),
                                      list(self.prompt_token_ids), True)
