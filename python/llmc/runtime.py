"""Run a compiled model (model.llmc/) from Python, one ragged, paged step at a time.

    from llmc.runtime import Model
    model = Model("model.llmc", num_threads=4)
    model.generate([[1, 2, 3], [7]], max_tokens=8)     # greedy ids per prompt
    model.step(tokens, positions, cu_seqlens_q, context_lens,
               block_tables, slot_mapping, logits_indices)   # [N, vocab] float32

The low-level layer under the tests and benchmarks (llmc.LLM serves requests). Errors come
back as LlmcRuntimeError carrying the runtime's one-line message. step() releases the GIL
while the model runs.
"""
from __future__ import annotations

import os

import numpy as np

from llmc.errors import LlmcRequestError, LlmcRuntimeError
from llmc.native import native

__all__ = ["LlmcRequestError", "LlmcRuntimeError", "Model"]


def _int32_array(values, name: str, ndim: int) -> np.ndarray:
    array = np.ascontiguousarray(values, dtype=np.int32)
    if array.ndim != ndim:
        raise LlmcRuntimeError(f"{name} must have {ndim} dimension(s), not {array.ndim}")
    return array


class Model:
    """A loaded artifact with its device and KV cache.

    num_threads: CPU threads (None: one per hardware thread). num_kv_blocks: KV cache blocks
    (None: the runtime's default memory budget). close() (or the end of a `with` block)
    frees it once no engine holds it.
    """

    def __init__(self, path, num_threads: int | None = None, num_kv_blocks: int | None = None):
        self._model = native.Model.open(os.fspath(path), num_threads=num_threads or 0,
                                        num_kv_blocks=num_kv_blocks or 0)

    def close(self) -> None:
        self._model = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def native(self):
        """The runtime's model (for llmc.engine.Engine)."""
        if self._model is None:
            raise LlmcRuntimeError("the model is closed")
        return self._model

    vocab_size = property(lambda self: self.native().vocab_size)
    hidden_size = property(lambda self: self.native().hidden_size)
    # An embedding model (exported without its LM head): step() returns the final hidden
    # states of the rows it asks for, hidden_size wide, and the model generates nothing.
    outputs_hidden_states = property(lambda self: self.native().outputs_hidden_states)
    # A sequence classifier: step() returns its score head's logits, one per label (labels:
    # their names), and the model generates nothing.
    outputs_class_logits = property(lambda self: self.native().outputs_class_logits)
    labels = property(lambda self: list(self.native().labels))
    # The width of step()'s rows: vocab_size, hidden_size, or the labels' count.
    output_size = property(lambda self: self.native().output_size)
    num_layers = property(lambda self: self.native().num_layers)
    block_size = property(lambda self: self.native().block_size)
    max_num_batched_tokens = property(lambda self: self.native().max_num_batched_tokens)
    max_num_seqs = property(lambda self: self.native().max_num_seqs)
    num_kv_blocks = property(lambda self: self.native().num_kv_blocks)
    # KV cache groups (layers of different attention windows): step() takes one run of
    # block-table rows and one of slots per group.
    num_kv_groups = property(lambda self: self.native().num_kv_groups)
    num_threads = property(lambda self: self.native().num_threads)

    def step(self, tokens, positions, cu_seqlens_q, context_lens, block_tables, slot_mapping,
             logits_indices, lora_indices=None, lora_adapters=()) -> np.ndarray:
        """One model step over a ragged, paged batch (see StepABI.h); returns
        the [N, vocab] float32 logits (an embedding model's [N, hidden] final hidden
        states). The caller picks the KV block ids. With lora_indices ([T]), token t runs
        with the LoRA adapter lora_adapters[lora_indices[t]] (from load_lora; -1: none)."""
        arrays = self._step_arrays(tokens, positions, cu_seqlens_q, context_lens, block_tables,
                                   slot_mapping, logits_indices)
        model = self.native()
        logits = np.empty((len(arrays[3]), model.output_size), dtype=np.float32)
        indices = None if lora_indices is None else _int32_array(lora_indices, "lora_indices", 1)
        model.step(*arrays, logits, indices, list(lora_adapters))
        return logits

    def load_lora(self, directory, max_rank: int = 16):
        """The PEFT LoRA adapter in `directory`, for step()'s lora_adapters (the artifact must
        be compiled with --enable-lora; each layer's rank at most max_rank)."""
        return self.native().load_lora(os.fspath(directory), max_rank)

    num_lora_sites = property(lambda self: self.native().num_lora_sites)

    @staticmethod
    def _step_arrays(tokens, positions, cu_seqlens_q, context_lens, block_tables, slot_mapping,
                     logits_indices) -> list[np.ndarray]:
        return [_int32_array(values, name, ndim) for values, name, ndim in (
            (tokens, "tokens", 1), (positions, "positions", 1),
            (cu_seqlens_q, "cu_seqlens_q", 1), (context_lens, "context_lens", 1),
            (block_tables, "block_tables", 2), (slot_mapping, "slot_mapping", 1),
            (logits_indices, "logits_indices", 1))]

    def step_greedy(self, tokens, positions, cu_seqlens_q, context_lens, block_tables,
                    slot_mapping, logits_indices) -> np.ndarray:
        """step(), but returns each sequence's greedy token ([N] int32, the lowest index of its
        largest logit) instead of the logits: on a GPU it is picked there, and only the ids
        come back."""
        arrays = self._step_arrays(tokens, positions, cu_seqlens_q, context_lens, block_tables,
                                   slot_mapping, logits_indices)
        next_tokens = np.empty(len(arrays[3]), dtype=np.int32)
        self.native().step_greedy(*arrays, next_tokens)
        return next_tokens

    @property
    def greedy_on_device(self) -> bool:
        """Whether step_greedy picks the tokens on the GPU (a cuda artifact)."""
        return self.native().greedy_on_device

    def generate(self, prompts: list[list[int]], max_tokens: int = 16,
                 stop_token_ids: list[int] | None = None) -> list[list[int]]:
        """Greedy generation through a fresh engine: the generated ids of each prompt."""
        return self.native().generate([[int(t) for t in prompt] for prompt in prompts],
                                      max_tokens, list(stop_token_ids or []))
