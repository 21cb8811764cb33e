"""Run a compiled model (model.llmc/) from Python through libllmc_runtime_c.so.

    from llmc.runtime import Model
    model = Model("model.llmc", num_threads=4)
    model.generate([[1, 2, 3], [7]], max_tokens=8)     # greedy ids per prompt
    model.step(tokens, positions, cu_seqlens_q, context_lens,
               block_tables, slot_mapping, logits_indices)   # [N, vocab] float32

The library is $LLMC_RUNTIME_LIB, or build/lib/libllmc_runtime_c.so of this
checkout. A thin ctypes layer over include/llmc/Runtime/llmc_runtime.h: errors
come back as LlmcRuntimeError carrying the runtime's one-line message.
"""
from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path

import numpy as np

_ERROR_BUFFER_SIZE = 1024
_int32_p = ctypes.POINTER(ctypes.c_int32)
_int64_p = ctypes.POINTER(ctypes.c_int64)
_float_p = ctypes.POINTER(ctypes.c_float)


class LlmcRuntimeError(RuntimeError):
    """A failure the runtime reported: a bad artifact, a batch it refuses, ..."""


def library_path() -> Path:
    """Where the C runtime is looked for: $LLMC_RUNTIME_LIB or this checkout's build."""
    override = os.environ.get("LLMC_RUNTIME_LIB")
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[2] / "build" / "lib" / "libllmc_runtime_c.so"


@functools.cache
def open_library() -> ctypes.CDLL:
    """libllmc_runtime_c.so, loaded once; each binding declares the functions it calls."""
    path = library_path()
    if not path.exists():
        raise LlmcRuntimeError(f"{path}: no llmc runtime library (build the llmc_runtime_c "
                               "target, or set LLMC_RUNTIME_LIB)")
    return ctypes.CDLL(str(path))


@functools.cache
def _load_library() -> ctypes.CDLL:
    lib = open_library()
    handle, err = ctypes.c_void_p, ctypes.c_char_p
    lib.llmc_runtime_open.restype = handle
    lib.llmc_runtime_open.argtypes = [ctypes.c_char_p, ctypes.c_int32, ctypes.c_int64, err,
                                      ctypes.c_size_t]
    lib.llmc_runtime_close.restype = None
    lib.llmc_runtime_close.argtypes = [handle]
    for name in ("vocab_size", "num_layers", "block_size", "max_num_batched_tokens",
                 "max_num_seqs", "num_kv_blocks"):
        getter = getattr(lib, f"llmc_runtime_{name}")
        getter.restype = ctypes.c_int64
        getter.argtypes = [handle]
    lib.llmc_runtime_num_threads.restype = ctypes.c_int32
    lib.llmc_runtime_num_threads.argtypes = [handle]
    lib.llmc_runtime_step.restype = ctypes.c_int
    lib.llmc_runtime_step.argtypes = [handle, ctypes.c_int64, ctypes.c_int64, _int32_p, _int32_p,
                                      _int32_p, _int32_p, _int32_p, ctypes.c_int64, _int32_p,
                                      _int32_p, _float_p, err, ctypes.c_size_t]
    lib.llmc_runtime_generate.restype = ctypes.c_int
    lib.llmc_runtime_generate.argtypes = [handle, ctypes.c_int64, _int32_p, _int64_p,
                                          ctypes.c_int64, _int32_p, ctypes.c_int64, _int32_p,
                                          _int64_p, err, ctypes.c_size_t]
    return lib


class NativeHandle:
    """A handle the C runtime allocated: closed by close(), at the end of a `with` block or
    when garbage-collected. A subclass sets _handle and says how to free it and what it is."""

    _handle = None  # also when __init__ fails before opening
    _kind = "handle"

    def _free(self, handle) -> None:
        raise NotImplementedError

    def close(self) -> None:
        if self._handle:
            self._free(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def __del__(self):
        self.close()

    def _open_handle(self):
        if not self._handle:
            raise LlmcRuntimeError(f"the {self._kind} is closed")
        return self._handle


def _int32_array(values, name: str, ndim: int) -> np.ndarray:
    array = np.ascontiguousarray(values, dtype=np.int32)
    if array.ndim != ndim:
        raise LlmcRuntimeError(f"{name} must have {ndim} dimension(s), not {array.ndim}")
    return array


def _pointer(array: np.ndarray, kind):
    return array.ctypes.data_as(kind)


class Model(NativeHandle):
    """A loaded artifact with its CPU device and KV cache.

    num_threads: CPU threads (None: one per hardware thread). num_kv_blocks:
    KV cache blocks (None: the runtime's default memory budget).
    """

    _kind = "model"

    def __init__(self, path, num_threads: int | None = None, num_kv_blocks: int | None = None):
        self._lib = _load_library()
        err = ctypes.create_string_buffer(_ERROR_BUFFER_SIZE)
        handle = self._lib.llmc_runtime_open(os.fsencode(path), num_threads or 0,
                                             num_kv_blocks or 0, err, len(err))
        if not handle:
            raise LlmcRuntimeError(err.value.decode(errors="replace"))
        self._handle = handle

    def _free(self, handle) -> None:
        self._lib.llmc_runtime_close(handle)

    def _info(self, name: str) -> int:
        return int(getattr(self._lib, f"llmc_runtime_{name}")(self._open_handle()))

    vocab_size = property(lambda self: self._info("vocab_size"))
    num_layers = property(lambda self: self._info("num_layers"))
    block_size = property(lambda self: self._info("block_size"))
    max_num_batched_tokens = property(lambda self: self._info("max_num_batched_tokens"))
    max_num_seqs = property(lambda self: self._info("max_num_seqs"))
    num_kv_blocks = property(lambda self: self._info("num_kv_blocks"))
    num_threads = property(lambda self: self._info("num_threads"))

    def step(self, tokens, positions, cu_seqlens_q, context_lens, block_tables, slot_mapping,
             logits_indices) -> np.ndarray:
        """One model step over a ragged, paged batch (see StepABI.h); returns
        the [N, vocab] float32 logits. The caller picks the KV block ids."""
        tokens = _int32_array(tokens, "tokens", 1)
        positions = _int32_array(positions, "positions", 1)
        cu_seqlens_q = _int32_array(cu_seqlens_q, "cu_seqlens_q", 1)
        context_lens = _int32_array(context_lens, "context_lens", 1)
        block_tables = _int32_array(block_tables, "block_tables", 2)
        slot_mapping = _int32_array(slot_mapping, "slot_mapping", 1)
        logits_indices = _int32_array(logits_indices, "logits_indices", 1)
        num_tokens, num_seqs = len(tokens), len(context_lens)
        # The C side reads these lengths from T and N: check them here.
        for name, array, length in (("positions", positions, num_tokens),
                                    ("slot_mapping", slot_mapping, num_tokens),
                                    ("cu_seqlens_q", cu_seqlens_q, num_seqs + 1),
                                    ("logits_indices", logits_indices, num_seqs),
                                    ("block_tables", block_tables, num_seqs)):
            if len(array) != length:
                raise LlmcRuntimeError(f"{name} has {len(array)} entries, expected {length}")
        logits = np.empty((num_seqs, self.vocab_size), dtype=np.float32)
        err = ctypes.create_string_buffer(_ERROR_BUFFER_SIZE)
        status = self._lib.llmc_runtime_step(
            self._open_handle(), num_tokens, num_seqs, _pointer(tokens, _int32_p),
            _pointer(positions, _int32_p), _pointer(cu_seqlens_q, _int32_p),
            _pointer(context_lens, _int32_p), _pointer(block_tables, _int32_p),
            block_tables.shape[1], _pointer(slot_mapping, _int32_p),
            _pointer(logits_indices, _int32_p), _pointer(logits, _float_p), err, len(err))
        if status != 0:
            raise LlmcRuntimeError(err.value.decode(errors="replace"))
        return logits

    def generate(self, prompts: list[list[int]], max_tokens: int = 16,
                 stop_token_ids: list[int] | None = None) -> list[list[int]]:
        """Greedy generation through a fresh engine: the generated ids of each prompt."""
        offsets = np.zeros(len(prompts) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(prompt) for prompt in prompts])
        flat = np.ascontiguousarray([t for prompt in prompts for t in prompt] or [0],
                                    dtype=np.int32)
        stops = np.ascontiguousarray(stop_token_ids or [0], dtype=np.int32)
        outputs = np.zeros((len(prompts), max(max_tokens, 1)), dtype=np.int32)
        lengths = np.zeros(len(prompts), dtype=np.int64)
        err = ctypes.create_string_buffer(_ERROR_BUFFER_SIZE)
        status = self._lib.llmc_runtime_generate(
            self._open_handle(), len(prompts), _pointer(flat, _int32_p),
            _pointer(offsets, _int64_p), max_tokens, _pointer(stops, _int32_p),
            len(stop_token_ids or []),
            _pointer(outputs, _int32_p), _pointer(lengths, _int64_p), err, len(err))
        if status != 0:
            raise LlmcRuntimeError(err.value.decode(errors="replace"))
        return [outputs[i, :lengths[i]].tolist() for i in range(len(prompts))]
