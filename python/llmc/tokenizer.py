"""The C++ tokenizer (Hugging Face tokenizer.json) from Python.

    from llmc.tokenizer import Tokenizer
    tokenizer = Tokenizer("models/smollm2-135m/tokenizer.json")
    ids = tokenizer.encode("Hello, world")               # add_special_tokens=True
    pair = tokenizer.encode_pair("a query", "a document")  # a cross-encoder's input
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

    def encode(self, text: str, add_special_tokens: bool = True,
               max_length: int | None = None) -> list[int]:
        """The ids of `text`; with max_length, its ids cut on the right to fit that many
        with the template's, as `tokenizers`' truncation does."""
        _check_max_length(max_length)
        return self._tokenizer.encode(text, add_special_tokens, max_length)

    def encode_pair(self, text: str, pair: str, add_special_tokens: bool = True,
                    max_length: int | None = None) -> list[int]:
        """The ids of a (query, document) pair as a cross-encoder reads them: `tokenizers`'
        encode(text, pair), with the pair template's special tokens; with max_length, cut
        to that many ids as its truncation "longest_first" (on the right) does."""
        _check_max_length(max_length)
        return self._tokenizer.encode_pair(text, pair, add_special_tokens, max_length)

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        return self._tokenizer.decode([int(i) for i in ids], skip_special_tokens)

    def decode_stream(self, skip_special_tokens: bool = True) -> "DecodeStream":
        return DecodeStream(self, skip_special_tokens)


def _check_max_length(max_length) -> None:
    if max_length is not None and (not isinstance(max_length, int) or isinstance(max_length, bool)
                                   or max_length < 0):
        raise ValueError(f"max_length must be a non-negative int, not {max_length!r}")


class DecodeStream:
    """Incremental detokenization: step(id) returns the text that id completed (often ""),
    finish() what is still held back; together they make decode(ids)."""

    def __init__(self, tokenizer: Tokenizer, skip_special_tokens: bool = True):
        self._stream = native.DecodeStream(tokenizer._tokenizer, skip_special_tokens)

    def step(self, token_id: int) -> str:
        return self._stream.step(int(token_id))

    def finish(self) -> str:
        return self._stream.finish()
