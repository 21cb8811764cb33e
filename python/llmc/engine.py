"""The serving engine from Python: continuous batching over the paged KV cache.

    from llmc.runtime import Model
    from llmc.engine import Engine
    with Model("model.llmc", num_kv_blocks=256) as model, Engine(model, max_num_seqs=8) as engine:
        engine.add_request(0, [1, 2, 3], max_tokens=8, temperature=0)
        while engine.has_unfinished():
            for output in engine.step():       # dicts: request, index, token, logprob,
                ...                            # top_logprobs, finish_reason
        engine.generate([[1, 2, 3], [7]], max_tokens=8, temperature=0)   # all at once
        engine.stats()                         # steps, tokens computed/cached, preemptions...

A thin ctypes layer over the llmc_engine_* functions of llmc_runtime.h: settings and
results cross as JSON with vLLM's names; errors come back as LlmcRuntimeError.
"""
from __future__ import annotations

import ctypes
import functools
import json

import numpy as np

from llmc.runtime import LlmcRuntimeError, Model, NativeHandle, open_library

_ERROR_BUFFER_SIZE = 1024


@functools.cache
def _load_library() -> ctypes.CDLL:
    lib = open_library()
    handle, err = ctypes.c_void_p, ctypes.c_char_p
    text_out = ctypes.POINTER(ctypes.c_char_p)
    lib.llmc_engine_new.restype = handle
    lib.llmc_engine_new.argtypes = [handle, ctypes.c_char_p, err, ctypes.c_size_t]
    lib.llmc_engine_free.restype = None
    lib.llmc_engine_free.argtypes = [handle]
    lib.llmc_engine_add_request.restype = ctypes.c_int
    lib.llmc_engine_add_request.argtypes = [handle, ctypes.c_uint64,
                                            ctypes.POINTER(ctypes.c_int32), ctypes.c_int64,
                                            ctypes.c_char_p, err, ctypes.c_size_t]
    lib.llmc_engine_step.restype = ctypes.c_int
    lib.llmc_engine_step.argtypes = [handle, text_out, err, ctypes.c_size_t]
    lib.llmc_engine_abort.restype = ctypes.c_int
    lib.llmc_engine_abort.argtypes = [handle, ctypes.c_uint64, text_out, err, ctypes.c_size_t]
    lib.llmc_engine_has_unfinished.restype = ctypes.c_int
    lib.llmc_engine_has_unfinished.argtypes = [handle]
    lib.llmc_engine_stats.restype = ctypes.c_char_p
    lib.llmc_engine_stats.argtypes = [handle]
    return lib


class Engine(NativeHandle):
    """Requests over one model. Settings (all optional): max_num_seqs,
    max_num_batched_tokens, max_model_len, enable_prefix_caching, seed, swap_space
    (GiB of host memory for preempted sequences' KV blocks). The
    model must stay open while the engine lives, and serve one engine at a time."""

    _kind = "engine"

    def __init__(self, model: Model, **config):
        self._lib = _load_library()
        self._model = model  # keeps the model alive as long as the engine
        err = ctypes.create_string_buffer(_ERROR_BUFFER_SIZE)
        handle = self._lib.llmc_engine_new(model._open_handle(), json.dumps(config).encode(),
                                           err, len(err))
        if not handle:
            raise LlmcRuntimeError(err.value.decode(errors="replace"))
        self._handle = handle

    def _free(self, handle) -> None:
        self._lib.llmc_engine_free(handle)

    def _call_for_json(self, function, *args):
        text = ctypes.c_char_p()
        err = ctypes.create_string_buffer(_ERROR_BUFFER_SIZE)
        if function(self._open_handle(), *args, ctypes.byref(text), err, len(err)) != 0:
            raise LlmcRuntimeError(err.value.decode(errors="replace"))
        return json.loads(text.value)

    def add_request(self, request_id: int, prompt: list[int], **options) -> None:
        """Queues a request. Options (vLLM's names): max_tokens, n, temperature, top_k,
        top_p, min_p, repetition_penalty, presence_penalty, frequency_penalty, seed,
        logprobs, stop_token_ids."""
        ids = np.ascontiguousarray(prompt if len(prompt) else [0], dtype=np.int32)
        err = ctypes.create_string_buffer(_ERROR_BUFFER_SIZE)
        status = self._lib.llmc_engine_add_request(
            self._open_handle(), request_id, ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)),
            len(prompt), json.dumps(options).encode(), err, len(err))
        if status != 0:
            raise LlmcRuntimeError(err.value.decode(errors="replace"))

    def step(self) -> list[dict]:
        """One model step: the outputs it produced."""
        return self._call_for_json(self._lib.llmc_engine_step)

    def abort(self, request_id: int) -> list[dict]:
        """Ends a request now; its samples' abort outputs."""
        return self._call_for_json(self._lib.llmc_engine_abort, request_id)

    def has_unfinished(self) -> bool:
        return bool(self._lib.llmc_engine_has_unfinished(self._open_handle()))

    def stats(self) -> dict:
        return json.loads(self._lib.llmc_engine_stats(self._open_handle()))

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
