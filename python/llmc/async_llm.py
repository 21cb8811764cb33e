"""AsyncLLM: streaming generation for asyncio applications, with vLLM's API.

    from llmc import AsyncLLM, SamplingParams
    llm = AsyncLLM("model.llmc")
    async for output in llm.generate("Hello", SamplingParams(max_tokens=32), "request-0"):
        print(output.outputs[0].text)           # the text so far; output.finished at the end
    llm.shutdown()

Each yielded RequestOutput holds everything generated so far (vLLM's cumulative outputs).
A pooling model (an embedding model, a sequence classifier) answers encode() instead, once.
Leaving the loop early, or cancelling its task, aborts the request and frees its KV blocks.
One thread polls the engine for every request's events and hands them to the request's
event loop.
"""
from __future__ import annotations

import asyncio
import itertools
import os
import threading
from typing import AsyncIterator, Optional, Union

from llmc.engine_args import open_engine
from llmc.errors import LlmcRuntimeError
from llmc.lora import LoraAdapters, LoRARequest, pop_max_lora_rank
from llmc.outputs import (ClassificationRequestOutput, EmbeddingRequestOutput, PoolingParams,
                          PoolingState, RequestOutput, RequestState)
from llmc.prompts import max_tokens, normalize, truncated
from llmc.sampling_params import SamplingParams
from llmc.tokenizer import Tokenizer

_POLL_SECONDS = 0.2


class AsyncLLM:
    """The engine arguments are LLM's (llmc.llm.LLM), enable_lora and max_lora_rank too."""

    def __init__(self, model: Union[str, os.PathLike], **engine_args):
        max_lora_rank = pop_max_lora_rank(engine_args)
        self.artifact, self._engine = open_engine(model, **engine_args)
        self._adapters = LoraAdapters(self._engine, max_lora_rank)
        native_tokenizer = self._engine.tokenizer
        self._tokenizer = Tokenizer.wrap(native_tokenizer) if native_tokenizer else None
        self._request_ids = itertools.count()
        # Guards _streams and _engine_ids: a request is entered there in the same critical
        # section as its submit(), so the poller never sees an event it cannot route.
        self._lock = threading.Lock()
        self._streams: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Queue]] = {}
        self._engine_ids: dict[str, int] = {}
        self._running = True
        self._poller = threading.Thread(target=self._poll, name="llmc-async-poller", daemon=True)
        self._poller.start()

    def get_tokenizer(self) -> Optional[Tokenizer]:
        return self._tokenizer

    async def generate(self, prompt, sampling_params: Optional[SamplingParams] = None,
                       request_id: Optional[str] = None,
                       lora_request: Optional[LoRARequest] = None,
                       priority: int = 0) -> AsyncIterator[RequestOutput]:
        """Yields the request's RequestOutput each time it has new tokens, the last one with
        finished=True. lora_request: the LoRA adapter it runs with (enable_lora). priority:
        lower first, under scheduling_policy "priority". Raises LlmcRequestError for a
        request the engine refuses."""
        if not self._running:
            raise LlmcRuntimeError("the AsyncLLM is shut down")
        batch = normalize(prompt, self._tokenizer)
        if len(batch) != 1:
            raise ValueError("AsyncLLM.generate takes one prompt; call it once per prompt")
        params = sampling_params or SamplingParams()
        one = truncated(batch[0], params, self._engine.max_model_len)
        request_id = request_id if request_id is not None else str(next(self._request_ids))
        options = params.engine_options(max_tokens(params, one, self._engine.max_model_len),
                                        self._engine.eos_token_ids)
        if priority:
            options["priority"] = priority
        state = RequestState(request_id, one.text, one.token_ids, params, self._decode_token)
        lora = None if lora_request is None else self._adapters.adapter_of(lora_request)
        submit = lambda: self._engine.submit(  # noqa: E731
            one.token_ids, options, params.stop_strings, self._tokenizer is not None,
            params.grammar_spec(), skip_special_tokens=params.skip_special_tokens, lora=lora)
        async for output in self._stream(request_id, submit, state, every_batch=True):
            yield output

    async def encode(self, prompt, pooling_params: Optional[PoolingParams] = None,
                     request_id: Optional[str] = None,
                     priority: int = 0) -> AsyncIterator[Union[EmbeddingRequestOutput,
                                                               ClassificationRequestOutput]]:
        """A pooling model's answer to one prompt, as vLLM's AsyncLLM.encode: yields once,
        finished, an EmbeddingRequestOutput (an embedding model: LLM.embed's) or a
        ClassificationRequestOutput (a sequence classifier: LLM.classify's). Raises
        ValueError on a generative model and LlmcRequestError for a prompt the engine
        refuses."""
        if not self._running:
            raise LlmcRuntimeError("the AsyncLLM is shut down")
        if not (self._engine.outputs_hidden_states or self._engine.outputs_class_logits):
            raise ValueError("encode() needs a pooling model (an embedding model or a sequence "
                             "classifier); this one generates text (generate())")
        batch = normalize(prompt, self._tokenizer)
        if len(batch) != 1:
            raise ValueError("AsyncLLM.encode takes one prompt; call it once per prompt")
        request_id = request_id if request_id is not None else str(next(self._request_ids))
        options = (pooling_params or PoolingParams()).engine_options()
        if priority:
            options["priority"] = priority
        token_ids = batch[0].token_ids
        state = PoolingState(request_id, token_ids, self._engine.outputs_class_logits)
        submit = lambda: self._engine.submit(token_ids, options, [], False, None)  # noqa: E731
        async for output in self._stream(request_id, submit, state, every_batch=False):
            yield output

    async def _stream(self, request_id: str, submit, state, every_batch: bool) -> AsyncIterator:
        """Submits a request (submit() -> the engine's id) and feeds `state` its events until
        state.finished, yielding state.output() after each batch of them (every_batch) or
        once at the end; aborts the request when the caller leaves early."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        with self._lock:
            if request_id in self._engine_ids:
                raise ValueError(f"request {request_id!r} is already running")
            engine_id = submit()
            self._streams[engine_id] = (loop, queue)
            self._engine_ids[request_id] = engine_id
        try:
            while not state.finished:
                events = await queue.get()
                while not queue.empty():
                    events.extend(queue.get_nowait())
                for event in events:
                    state.apply(event)
                if state.error is not None:
                    raise state.error
                if every_batch or state.finished:
                    yield state.output()
        finally:
            with self._lock:
                self._streams.pop(engine_id, None)
                self._engine_ids.pop(request_id, None)
            if not state.finished:
                self._engine.abort(engine_id)

    async def abort(self, request_id: str) -> None:
        """Ends a running request: its generate() yields the samples with
        finish_reason "abort" and stops."""
        with self._lock:
            engine_id = self._engine_ids.get(request_id)
        if engine_id is not None:
            self._engine.abort(engine_id)

    def shutdown(self) -> None:
        """Aborts what runs and stops the engine's threads."""
        if not self._running:
            return
        self._running = False
        self._poller.join()
        self._engine.shutdown(False)

    def _decode_token(self, token: int) -> Optional[str]:
        return self._tokenizer.decode([token], skip_special_tokens=False) \
            if self._tokenizer else None

    def _poll(self) -> None:
        while self._running:
            events = self._engine.poll(_POLL_SECONDS)
            if not events:
                continue
            by_request: dict[int, list[dict]] = {}
            for event in events:
                by_request.setdefault(event["request"], []).append(event)
            with self._lock:
                targets = [(self._streams.get(engine_id), batch)
                           for engine_id, batch in by_request.items()]
            for target, batch in targets:
                if target is None:
                    continue  # its generate() has returned
                loop, queue = target
                try:
                    loop.call_soon_threadsafe(queue.put_nowait, batch)
                except RuntimeError:
                    pass  # its event loop is closed
