"""The C++ tokenizer (Hugging Face tokenizer.json) from Python, through libllmc_runtime_c.so.

    from llmc.tokenizer import Tokenizer
    tokenizer = Tokenizer("models/smollm2-135m/tokenizer.json")
    ids = tokenizer.encode("Hello, world")               # add_special_tokens=True
    text = tokenizer.decode(ids)                         # skip_special_tokens=True
    stream = tokenizer.decode_stream()
    pieces = [stream.step(i) for i in ids] + [stream.finish()]   # "".join(pieces) == text

The same defaults as the `tokenizers` package's encode and decode. A thin ctypes layer over
the tokenizer functions of include/llmc/Runtime/llmc_runtime.h; errors come back as
LlmcRuntimeError carrying the runtime's one-line message.
"""
from __future__ import annotations

import ctypes
import functools
from pathlib import Path

import numpy as np

from llmc.runtime import LlmcRuntimeError, open_library

_ERROR_BUFFER_SIZE = 1024


@functools.cache
def _load_library() -> ctypes.CDLL:
    lib = open_library()
    handle, err, size = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
    int32_p = ctypes.POINTER(ctypes.c_int32)
    lib.llmc_tokenizer_load.restype = handle
    lib.llmc_tokenizer_load.argtypes = [ctypes.c_char_p, err, size]
    lib.llmc_tokenizer_free.restype = None
    lib.llmc_tokenizer_free.argtypes = [handle]
    lib.llmc_tokenizer_id_limit.restype = ctypes.c_int64
    lib.llmc_tokenizer_id_limit.argtypes = [handle]
    lib.llmc_tokenizer_token_to_id.restype = ctypes.c_int64
    lib.llmc_tokenizer_token_to_id.argtypes = [handle, ctypes.c_char_p]
    lib.llmc_tokenizer_encode.restype = ctypes.c_int64
    lib.llmc_tokenizer_encode.argtypes = [handle, ctypes.c_char_p, size, ctypes.c_int, int32_p,
                                          ctypes.c_int64, err, size]
    lib.llmc_tokenizer_decode.restype = ctypes.c_int64
    lib.llmc_tokenizer_decode.argtypes = [handle, int32_p, ctypes.c_int64, ctypes.c_int,
                                          ctypes.c_char_p, ctypes.c_int64, err, size]
    lib.llmc_decode_stream_new.restype = handle
    lib.llmc_decode_stream_new.argtypes = [handle, ctypes.c_int]
    lib.llmc_decode_stream_free.restype = None
    lib.llmc_decode_stream_free.argtypes = [handle]
    for name in ("step", "finish"):
        function = getattr(lib, f"llmc_decode_stream_{name}")
        function.restype = ctypes.c_int
        extra = [ctypes.c_int32] if name == "step" else []
        function.argtypes = [handle, *extra, ctypes.POINTER(ctypes.c_void_p),
                             ctypes.POINTER(size), err, size]
    return lib


def _error_buffer():
    return ctypes.create_string_buffer(_ERROR_BUFFER_SIZE)


def _raise(buffer) -> None:
    raise LlmcRuntimeError(buffer.value.decode("utf-8", "replace"))


class Tokenizer:
    """A loaded tokenizer.json."""

    def __init__(self, path: str | Path):
        self._lib = _load_library()
        err = _error_buffer()
        self._handle = self._lib.llmc_tokenizer_load(str(path).encode(), err, len(err))
        if not self._handle:
            _raise(err)

    def close(self) -> None:
        if getattr(self, "_handle", None):
            self._lib.llmc_tokenizer_free(self._handle)
            self._handle = None

    def __del__(self):
        self.close()

    @property
    def id_limit(self) -> int:
        """One past the largest token id."""
        return self._lib.llmc_tokenizer_id_limit(self._handle)

    def token_to_id(self, token: str) -> int | None:
        found = self._lib.llmc_tokenizer_token_to_id(self._handle, token.encode())
        return None if found < 0 else found

    def encode_bytes(self, text: bytes, add_special_tokens: bool = True) -> list[int]:
        """The ids of UTF-8 text given as bytes (ill-formed UTF-8 raises LlmcRuntimeError)."""
        err = _error_buffer()
        capacity = len(text) + 16
        while True:
            ids = np.empty(capacity, dtype=np.int32)
            count = self._lib.llmc_tokenizer_encode(
                self._handle, text, len(text), int(add_special_tokens),
                ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), capacity, err, len(err))
            if count < 0:
                _raise(err)
            if count <= capacity:
                return ids[:count].tolist()
            capacity = count

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return self.encode_bytes(text.encode("utf-8"), add_special_tokens)

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        ids = list(ids)
        array = (ctypes.c_int32 * max(len(ids), 1))(*ids)
        err = _error_buffer()
        capacity = 8 * len(ids) + 64
        while True:
            buffer = ctypes.create_string_buffer(capacity)
            length = self._lib.llmc_tokenizer_decode(self._handle, array, len(ids),
                                                     int(skip_special_tokens), buffer, capacity,
                                                     err, len(err))
            if length < 0:
                _raise(err)
            if length <= capacity:
                return buffer.raw[:length].decode("utf-8")
            capacity = length

    def decode_stream(self, skip_special_tokens: bool = True) -> DecodeStream:
        return DecodeStream(self, skip_special_tokens)


class DecodeStream:
    """Incremental detokenization: step(id) returns the text that id completed (often ""),
    finish() what is still held back; together they make decode(ids)."""

    def __init__(self, tokenizer: Tokenizer, skip_special_tokens: bool = True):
        self._tokenizer = tokenizer  # kept alive: the stream reads its tables
        self._lib = tokenizer._lib
        self._handle = self._lib.llmc_decode_stream_new(tokenizer._handle,
                                                        int(skip_special_tokens))
        if not self._handle:
            raise MemoryError("llmc_decode_stream_new")

    def __del__(self):
        if getattr(self, "_handle", None):
            self._lib.llmc_decode_stream_free(self._handle)
            self._handle = None

    def _text(self, call, *args) -> str:
        text, length = ctypes.c_void_p(), ctypes.c_size_t()
        err = _error_buffer()
        if call(self._handle, *args, ctypes.byref(text), ctypes.byref(length), err, len(err)):
            _raise(err)
        return ctypes.string_at(text, length.value).decode("utf-8") if length.value else ""

    def step(self, token_id: int) -> str:
        return self._text(self._lib.llmc_decode_stream_step, token_id)

    def finish(self) -> str:
        return self._text(self._lib.llmc_decode_stream_finish)
