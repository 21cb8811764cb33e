"""The C++ chat-template engine (Hugging Face `chat_template`, Jinja2) from Python.

    from llmc.chat_template import ChatTemplate
    template = ChatTemplate(tokenizer_config["chat_template"])   # parse errors raise here
    prompt = template.render(messages, add_generation_prompt=True,
                             bos_token="<s>", eos_token="</s>", tools=tools)

It renders as transformers' apply_chat_template does (jinja2's ImmutableSandboxedEnvironment
with trim_blocks and lstrip_blocks, raise_exception, strftime_now, transformers' tojson).
Errors (a template the runtime cannot run, the template's raise_exception) are
LlmcRuntimeErrors carrying the runtime's one-line message.
"""
from __future__ import annotations

from llmc.native import native


class ChatTemplate:
    """A parsed chat template: construction fails on what the runtime cannot run."""

    def __init__(self, source: str):
        self._template = native.ChatTemplate.parse(source)

    def render(self, messages, add_generation_prompt: bool = False, **context) -> str:
        """The prompt text; `context` holds bos_token, eos_token, tools, date_string, ...
        (None, bool, int, float, str, lists and dicts with str keys, as a request carries)."""
        variables = {"messages": messages, "add_generation_prompt": add_generation_prompt,
                     **context}
        return self._template.render(variables)
