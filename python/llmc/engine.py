"""The serving engine from Python, stepped by hand: continuous batching over the paged KV cache.

    from llmc.runtime import Model
    from llmc.engine import Engine
    with Model("model.llmc", num_kv_blocks=256) as model, Engine(model, max_num_seqs=8) as engine:
        engine.add_request(0, [1, 2, 3], max_tokens=8, temperature=0)
        while engine.has_unfinished():
            for output in engine.step():       # dicts: request, index, token, logprob,
                ...                            # rank, top_logprobs, finish_reason,
                                               # prompt_logprobs
        engine.generate([[1, 2, 3], [7]], max_tokens=8, temperature=0)   # all at once
        engine.stats()                         # steps, tokens computed/cached, preemptions...
        engine.max_model_len                   # the longest sequence it serves

The synchronous core that llmc.LLM runs on its own threads; tests drive it step by step.
Settings and options have vLLM's names; errors come back as LlmcRuntimeError (a refused
request: LlmcRequestError). step() releases the GIL while the model runs.
"""
from __future__ import annotations

from llmc.errors import LlmcRuntimeError
from llmc.native import native
from llmc.runtime import Model


class Engine:
    """Requests over one model. Settings (all optional): max_num_seqs,
    max_num_batched_tokens, max_model_len, enable_prefix_caching, seed, swap_space
    (GiB of host memory for preempted sequences' KV blocks), speculative_config (vLLM's:
    {"method": "ngram", "num_speculative_tokens": K, ...}). The model serves one engine
    at a time."""

    def __init__(self, model: Model, **config):
        self._engine = native.Engine(model.native(), config)

    def close(self) -> None:
        self._engine = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def _native(self):
        if self._engine is None:
            raise LlmcRuntimeError("the engine is closed")
        return self._engine

    def add_request(self, request_id: int, prompt: list[int], **options) -> None:
        """Queues a request. Options (vLLM's names): max_tokens, n, temperature, top_k,
        top_p, min_p, repetition_penalty, presence_penalty, frequency_penalty, seed,
        logprobs, prompt_logprobs, stop_token_ids, logit_bias, min_tokens,
        allowed_token_ids. With prompt_logprobs, outputs of their own (token None) carry
        "prompt_logprobs": [{token, logprob, rank, top_logprobs}] for prompt tokens 1, 2,
        ... in order, before the first token."""
        self._native().add_request(request_id, [int(t) for t in prompt], options)

    def step(self) -> list[dict]:
        """One model step: the outputs it produced."""
        return self._native().step()

    def abort(self, request_id: int) -> list[dict]:
        """Ends a request now; its samples' abort outputs."""
        return self._native().abort(request_id)

    def has_unfinished(self) -> bool:
        return self._native().has_unfinished()

    @property
    def max_model_len(self) -> int:
        """The longest sequence (prompt and output) the engine serves."""
        return self._native().max_model_len

    def stats(self) -> dict:
        return self._native().stats()

    def generate(self, prompts: list[list[int]], first_id: int = 0,
                 **options) -> list[list[list[int]]]:
        """Adds the prompts as requests first_id, first_id + 1, ... and steps until all
        have finished: each request's samples' tokens."""
        n = options.get("n", 1)
        tokens = [[[] for _ in range(n)] for _ in prompts]
        for i, prompt in enumerate(prompts):
            self.add_request(first_id + i, prompt, **options)
        while self.has_unfinished():
            for output in self.step():
                if output["token"] is not None:
                    tokens[output["request"] - first_id][output["index"]].append(output["token"])
        return tokens
