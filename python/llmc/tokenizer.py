"""The C++ tokenizer (Hugging Face tokenizer.json) from Python.

    from llmc.tokenizer import Tokenizer
    tokenizer = Tokenizer("models/smollm2-135m/tokenizer.json")
    ids = tokenizer.encode("Hello, world")               # add_special_tokens=True
    text = tokenizer.decode(ids)                         # skip_special_tokens=True
    stream = tokenizer.decode_stream()
    pieces = [stream.step(i) for i in ids] + [stream.finish()]   # "".join(pieces) == text

The same defaults as the `tokenizers` package's encode and decode. Errors (a file it cannot
read, ill-formed UTF-8) are LlmcRuntimeErrors carrying the runtime's one-line message.
"""
from __future__ import annotations

import os

from llmc.native import native


class Tokenizer:
    """A loaded tokenizer.json. `Tokenizer.wrap` adopts one the runtime already holds."""

    def __init__(self, path: str | os.PathLike):
        self._tokenizer = native.Tokenizer.from_file(os.fspath(path))

    @classmethod
    def wrap(cls, handle) -> "Tokenizer":
        tokenizer = cls.__new__(cls)
        tokenizer._tokenizer = handle
        return tokenizer

    @property
    def id_limit(self) -> int:
        """One past the largest token id."""
        return self._tokenizer.id_limit()

    def token_to_id(self, token: str) -> int | None:
        return self._tokenizer.token_to_id(token)

    def encode_bytes(self, text: bytes, add_special_tokens: bool = True) -> list[int]:
        """The ids of UTF-8 text given as bytes (ill-formed UTF-8 raises LlmcRuntimeError)."""
        return self._tokenizer.encode_bytes(bytes(text), add_special_tokens)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return self._tokenizer.encode(text, add_special_tokens)

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        return self._tokenizer.decode([int(i) for i in ids], skip_special_tokens)

    def decode_stream(self, skip_special_tokens: bool = True) -> "DecodeStream":
        return DecodeStream(self, skip_special_tokens)


class DecodeStream:
    """Incremental detokenization: step(id) returns the text that id completed (often ""),
    finish() what is still held back; together they make decode(ids)."""

    def __init__(self, tokenizer: Tokenizer, skip_special_tokens: bool = True):
        self._stream = native.DecodeStream(tokenizer._tokenizer, skip_special_tokens)

    def step(self, token_id: int) -> str:
        return self._stream.step(int(token_id))

    def finish(self) -> str:
        return self._stream.finish()
