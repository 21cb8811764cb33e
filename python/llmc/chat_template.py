"""The C++ chat-template engine (Hugging Face `chat_template`, Jinja2) from Python.

    from llmc.chat_template import ChatTemplate
    template = ChatTemplate(tokenizer_config["chat_template"])   # parse errors raise here
    prompt = template.render(messages, add_generation_prompt=True,
                             bos_token="<s>", eos_token="</s>", tools=tools)

It renders as transformers' apply_chat_template does (jinja2's ImmutableSandboxedEnvironment
with trim_blocks and lstrip_blocks, raise_exception, strftime_now, transformers' tojson). A
thin ctypes layer over the chat template functions of include/llmc/Runtime/llmc_runtime.h;
errors (a template the runtime cannot run, the template's raise_exception) come back as
LlmcRuntimeError carrying the runtime's one-line message.
"""
from __future__ import annotations

import ctypes
import functools
import json

from llmc.runtime import LlmcRuntimeError, open_library

_ERROR_BUFFER_SIZE = 1024


@functools.cache
def _load_library() -> ctypes.CDLL:
    lib = open_library()
    err, size = ctypes.c_char_p, ctypes.c_size_t
    lib.llmc_chat_template_check.restype = ctypes.c_int
    lib.llmc_chat_template_check.argtypes = [ctypes.c_char_p, err, size]
    lib.llmc_chat_template_render.restype = ctypes.c_int
    lib.llmc_chat_template_render.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                              ctypes.POINTER(ctypes.c_void_p),
                                              ctypes.POINTER(size), err, size]
    lib.llmc_string_free.restype = None
    lib.llmc_string_free.argtypes = [ctypes.c_void_p]
    return lib


def _raise(buffer) -> None:
    raise LlmcRuntimeError(buffer.value.decode("utf-8", "replace"))


class ChatTemplate:
    """A parsed chat template: construction fails on what the runtime cannot run."""

    def __init__(self, source: str):
        self._lib = _load_library()
        self._source = source.encode("utf-8")
        err = ctypes.create_string_buffer(_ERROR_BUFFER_SIZE)
        if self._lib.llmc_chat_template_check(self._source, err, len(err)):
            _raise(err)

    def render(self, messages, add_generation_prompt: bool = False, **context) -> str:
        """The prompt text; `context` holds bos_token, eos_token, tools, date_string, ...
        (JSON-serializable values, as a request carries them)."""
        variables = {"messages": messages, "add_generation_prompt": add_generation_prompt,
                     **context}
        text, length = ctypes.c_void_p(), ctypes.c_size_t()
        err = ctypes.create_string_buffer(_ERROR_BUFFER_SIZE)
        if self._lib.llmc_chat_template_render(
                self._source, json.dumps(variables).encode("utf-8"), ctypes.byref(text),
                ctypes.byref(length), err, len(err)):
            _raise(err)
        try:
            return ctypes.string_at(text, length.value).decode("utf-8")
        finally:
            self._lib.llmc_string_free(text)
