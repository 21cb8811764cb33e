"""The C++ chat-template engine (runtime/chat/, through llmc.chat_template) against jinja2 set
up exactly as transformers' apply_chat_template sets it up: an ImmutableSandboxedEnvironment
with trim_blocks and lstrip_blocks, the loopcontrols extension and `{% generation %}`, the
globals raise_exception and strftime_now and transformers' own tojson filter.

The templates are those the tokenizer_config.json files of each family carry (as the JSON
decodes them): SmolLM2, Qwen2, Qwen2.5 (tools), Llama-2, Llama-3, Llama-3.1 (tools, builtin
tools, ipython), Llama-3.2 (strftime_now), Mistral v0.1, v0.2 and v0.3 (tools, namespace()),
Gemma, Phi-3 and Zephyr, plus a Qwen3-style template. Checked:

  * parity: the same text (or both fail, with the same message for raise_exception) for
    every family over conversations with and without a system message, multi-turn, unicode
    and surrounding whitespace, tool calls where the template has them, and conversations
    that break the role alternation Llama-2, Mistral and Gemma enforce;
  * jinja2 semantics on small templates: whitespace control (also on random layouts of
    text, tags and comments), scoping, loops, filters, tests, methods, operators, Undefined,
    tojson;
  * every template here parses; what the engine does not support fails when it is parsed,
    naming the line and column.
"""
from __future__ import annotations

import json
import random
import re
from datetime import datetime

import pytest
from jinja2 import nodes
from jinja2.exceptions import TemplateError
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

from llmc.chat_template import ChatTemplate
from llmc.runtime import LlmcRuntimeError
from llmc.testing.server import default_model_dir


# ---------------------------------------------------------------------------------------------
# The reference: transformers' environment (transformers/utils/chat_template_utils.py).
# ---------------------------------------------------------------------------------------------


class _GenerationTag(Extension):
    """transformers' AssistantTracker when no assistant mask is asked for: the body as is."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def _raise_exception(message):
    raise TemplateError(message)


def _reference_environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[_GenerationTag, loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = lambda format: datetime.now().strftime(format)
    return env


REFERENCE = _reference_environment()


def render_both(source: str, **context):
    """(reference, llmc) outcomes: ("ok", text) or ("error", message)."""
    try:
        expected = ("ok", REFERENCE.from_string(source).render(**context))
    except TemplateError as error:
        expected = ("error", str(error))
    except Exception as error:  # a TypeError and the like inside the template
        expected = ("error", f"{type(error).__name__}: {error}")
    try:
        actual = ("ok", ChatTemplate(source).render(**context))
    except LlmcRuntimeError as error:
        actual = ("error", str(error))
    return expected, actual


def assert_parity(source: str, **context) -> str:
    expected, actual = render_both(source, **context)
    assert actual[0] == expected[0], f"jinja2: {expected!r}\nllmc:   {actual!r}"
    if expected[0] == "ok":
        assert actual[1] == expected[1]
    return expected[1]


# ---------------------------------------------------------------------------------------------
# The families' templates.
# ---------------------------------------------------------------------------------------------

SMOLLM2 = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
           "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
           "Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
           "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
           "{{ '<|im_start|>assistant\n' }}{% endif %}")

QWEN2 = ("{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
         "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
         "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
         "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")

QWEN2_5 = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"""

LLAMA2 = ("{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
          "{% set system_message = messages[0]['content'] %}{% else %}"
          "{% set loop_messages = messages %}{% set system_message = false %}{% endif %}"
          "{% for message in loop_messages %}{% if (message['role'] == 'user') != "
          "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
          "user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and "
          "system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
          "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}"
          "{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}"
          "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
          "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}"
          "{% endif %}{% endfor %}")

LLAMA3 = ("{% set loop_messages = messages %}{% for message in loop_messages %}"
          "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ "
          "message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
          "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
          "{% endif %}")

_LLAMA3_1_HEAD = r"""{{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
"""

_LLAMA3_2_HEAD = r"""{{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- if strftime_now is defined %}
        {%- set date_string = strftime_now("%d %b %Y") %}
    {%- else %}
        {%- set date_string = "26 Jul 2024" %}
    {%- endif %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
"""

_LLAMA3_SYSTEM = r"""
{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
"""

_LLAMA3_1_SYSTEM_HEADER = r"""
{#- System message + builtin tools #}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if builtin_tools is defined or tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{%- if builtin_tools is defined %}
    {{- "Tools: " + builtin_tools | reject('equalto', 'code_interpreter') | join(", ") + "\n\n"}}
{%- endif %}
"""

_LLAMA3_2_SYSTEM_HEADER = r"""
{#- System message #}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
"""

_LLAMA3_TOOLS = r"""{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{#- Custom tools are passed in a user message with some extra guidance #}
{%- if tools_in_user_message and not tools is none %}
    {#- Extract the first user message so we can plug it in here #}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
{%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\n\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
"""

_LLAMA3_1_TOOL_CALL = r"""        {%- if builtin_tools is defined and tool_call.name in builtin_tools %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
            {{- "<|python_tag|>" + tool_call.name + ".call(" }}
            {%- for arg_name, arg_val in tool_call.arguments | items %}
                {{- arg_name + '="' + arg_val + '"' }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- endif %}
                {%- endfor %}
            {{- ")" }}
        {%- else  %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
            {{- '{"name": "' + tool_call.name + '", ' }}
            {{- '"parameters": ' }}
            {{- tool_call.arguments | tojson }}
            {{- "}" }}
        {%- endif %}
        {%- if builtin_tools is defined %}
            {#- This means we're in ipython mode #}
            {{- "<|eom_id|>" }}
        {%- else %}
            {{- "<|eot_id|>" }}
        {%- endif %}
"""

_LLAMA3_2_TOOL_CALL = r"""        {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
        {{- '{"name": "' + tool_call.name + '", ' }}
        {{- '"parameters": ' }}
        {{- tool_call.arguments | tojson }}
        {{- "}" }}
        {{- "<|eot_id|>" }}
"""

_LLAMA3_TAIL = r"""    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
"""

LLAMA3_1 = (_LLAMA3_1_HEAD + _LLAMA3_SYSTEM + _LLAMA3_1_SYSTEM_HEADER + _LLAMA3_TOOLS +
            _LLAMA3_1_TOOL_CALL + _LLAMA3_TAIL)
LLAMA3_2 = (_LLAMA3_2_HEAD + _LLAMA3_SYSTEM + _LLAMA3_2_SYSTEM_HEADER + _LLAMA3_TOOLS +
            _LLAMA3_2_TOOL_CALL + _LLAMA3_TAIL)

MISTRAL_V0_1 = ("{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != "
                "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
                "user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}"
                "{{ '[INST] ' + message['content'] + ' [/INST]' }}"
                "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token + ' ' }}"
                "{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}"
                "{% endif %}{% endfor %}")

MISTRAL_V0_2 = r"""{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('After the optional system message, conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if message['role'] == 'user' %}
        {%- if loop.first and system_message is defined %}
            {{- ' [INST] ' + system_message + '\n\n' + message['content'] + ' [/INST]' }}
        {%- else %}
            {{- ' [INST] ' + message['content'] + ' [/INST]' }}
        {%- endif %}
    {%- elif message['role'] == 'assistant' %}
        {{- ' ' + message['content'] + eos_token}}
    {%- else %}
        {{- raise_exception('Only user and assistant roles are supported, with the exception of an initial optional system message!') }}
    {%- endif %}
{%- endfor %}
"""

MISTRAL_V0_3 = r"""{%- if messages[0]["role"] == "system" %}
    {%- set system_message = messages[0]["content"] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}

{#- This block checks for alternating user/assistant messages, skipping tool calling messages #}
{%- set ns = namespace() %}
{%- set ns.index = 0 %}
{%- for message in loop_messages %}
    {%- if not (message.role == "tool" or message.role == "tool_results" or (message.tool_calls is defined and message.tool_calls is not none)) %}
        {%- if (message["role"] == "user") != (ns.index % 2 == 0) %}
            {{- raise_exception("After the optional system message, conversation roles must alternate user/assistant/user/assistant/...") }}
        {%- endif %}
        {%- set ns.index = ns.index + 1 %}
    {%- endif %}
{%- endfor %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if message["role"] == "user" %}
        {%- if tools is not none and (message == user_messages[-1]) %}
            {{- "[AVAILABLE_TOOLS] [" }}
            {%- for tool in tools %}
                {%- set tool = tool.function %}
                {{- '{"type": "function", "function": {' }}
                {%- for key, val in tool.items() if key != "return" %}
                    {%- if val is string %}
                        {{- '"' + key + '": "' + val + '"' }}
                    {%- else %}
                        {{- '"' + key + '": ' + val|tojson }}
                    {%- endif %}
                    {%- if not loop.last %}
                        {{- ", " }}
                    {%- endif %}
                {%- endfor %}
                {{- "}}" }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- else %}
                    {{- "]" }}
                {%- endif %}
            {%- endfor %}
            {{- "[/AVAILABLE_TOOLS]" }}
            {%- endif %}
        {%- if loop.last and system_message is defined %}
            {{- "[INST] " + system_message + "\n\n" + message["content"] + "[/INST]" }}
        {%- else %}
            {{- "[INST] " + message["content"] + "[/INST]" }}
        {%- endif %}
    {%- elif message.tool_calls is defined and message.tool_calls is not none %}
        {{- "[TOOL_CALLS] [" }}
        {%- for tool_call in message.tool_calls %}
            {%- set out = tool_call.function|tojson %}
            {{- out[:-1] }}
            {%- if not tool_call.id is defined or tool_call.id|length != 9 %}
                {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
            {%- endif %}
            {{- ', "id": "' + tool_call.id + '"}' }}
            {%- if not loop.last %}
                {{- ", " }}
            {%- else %}
                {{- "]" + eos_token }}
            {%- endif %}
        {%- endfor %}
    {%- elif message["role"] == "assistant" %}
        {{- " " + message["content"]|trim + eos_token}}
    {%- elif message["role"] == "tool_results" or message["role"] == "tool" %}
        {%- if message.content is defined and message.content.content is defined %}
            {%- set content = message.content.content %}
        {%- else %}
            {%- set content = message.content %}
        {%- endif %}
        {{- '[TOOL_RESULTS] {"content": ' + content|string + ", " }}
        {%- if not message.tool_call_id is defined or message.tool_call_id|length != 9 %}
            {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
        {%- endif %}
        {{- '"call_id": "' + message.tool_call_id + '"}[/TOOL_RESULTS]' }}
    {%- else %}
        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial optional system message!") }}
    {%- endif %}
{%- endfor %}
"""

GEMMA = ("{{ bos_token }}{% if messages[0]['role'] == 'system' %}"
         "{{ raise_exception('System role not supported') }}{% endif %}"
         "{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
         "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
         "{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}"
         "{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\n' + "
         "message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}"
         "{{'<start_of_turn>model\n'}}{% endif %}")

PHI3 = ("{% for message in messages %}{% if message['role'] == 'system' %}"
        "{{'<|system|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}"
        "{{'<|user|>\n' + message['content'] + '<|end|>\n'}}"
        "{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + "
        "'<|end|>\n'}}{% endif %}{% endfor %}{% if add_generation_prompt %}"
        "{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}")

ZEPHYR = ("{% for message in messages %}\n{% if message['role'] == 'user' %}\n"
          "{{ '<|user|>\n' + message['content'] + eos_token }}\n"
          "{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + "
          "eos_token }}\n{% elif message['role'] == 'assistant' %}\n"
          "{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n"
          "{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n"
          "{% endfor %}")

# After Qwen3's template: reversed iteration, namespace() with arguments, string methods.
QWEN3_STYLE = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and message.content is string and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if message.content is string %}
        {%- set content = message.content %}
    {%- else %}
        {%- set content = '' %}
    {%- endif %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is string %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in content %}
                {%- set reasoning_content = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
                {%- set content = content.split('</think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}
"""

# name: (template, bos_token, eos_token, uses tools)
FAMILIES = {
    "smollm2": (SMOLLM2, "<|im_start|>", "<|im_end|>", False),
    "qwen2": (QWEN2, "", "<|im_end|>", False),
    "qwen2.5": (QWEN2_5, "", "<|im_end|>", True),
    "qwen3-style": (QWEN3_STYLE, "", "<|im_end|>", True),
    "llama2": (LLAMA2, "<s>", "</s>", False),
    "llama3": (LLAMA3, "<|begin_of_text|>", "<|eot_id|>", False),
    "llama3.1": (LLAMA3_1, "<|begin_of_text|>", "<|eot_id|>", True),
    "llama3.2": (LLAMA3_2, "<|begin_of_text|>", "<|eot_id|>", True),
    "mistral-v0.1": (MISTRAL_V0_1, "<s>", "</s>", False),
    "mistral-v0.2": (MISTRAL_V0_2, "<s>", "</s>", False),
    "mistral-v0.3": (MISTRAL_V0_3, "<s>", "</s>", True),
    "gemma": (GEMMA, "<bos>", "<eos>", False),
    "phi3": (PHI3, "<s>", "<|endoftext|>", False),
    "zephyr": (ZEPHYR, "<s>", "</s>", False),
}

# ---------------------------------------------------------------------------------------------
# Conversations.
# ---------------------------------------------------------------------------------------------

SYSTEM = {"role": "system", "content": "You are a helpful assistant. Answer briefly."}
CONVERSATIONS = {
    "single-user": [{"role": "user", "content": "Hello, how are you?"}],
    "system-user": [SYSTEM, {"role": "user", "content": "What is the capital of France?"}],
    "multi-turn": [
        SYSTEM,
        {"role": "user", "content": "Hi there!"},
        {"role": "assistant", "content": "Hello! How can I help you today?"},
        {"role": "user", "content": "Tell me a joke."},
    ],
    "multi-turn-no-system": [
        {"role": "user", "content": "Hi there!"},
        {"role": "assistant", "content": "Hello! How can I help you today?"},
        {"role": "user", "content": "Tell me a joke."},
        {"role": "assistant", "content": "Why did the chicken cross the road?"},
    ],
    "unicode-and-whitespace": [
        {"role": "system", "content": "  Réponds en français. 你好!  \n"},
        {"role": "user", "content": "\n  Ünïcödé: ß, Σίσυφος, 😀👍🏽, \u00a0nbsp\u3000ideographic  \t\n"},
        {"role": "assistant", "content": " <think>\nhmm\n</think>\n\nVoilà — “quotes” & 'apostrophes' "},
        {"role": "user", "content": "Back\\slash \"quoted\" {{ not a tag }} {% nor this %}"},
    ],
    "bad-alternation": [
        {"role": "user", "content": "First"},
        {"role": "user", "content": "Second in a row"},
    ],
    "assistant-first": [
        {"role": "assistant", "content": "I speak first."},
        {"role": "user", "content": "Then me."},
    ],
}

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city, e.g. Zürich"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7.5},
            },
            "required": ["city"],
        },
    }},
    {"type": "function", "function": {
        "name": "search",
        "description": "Search the web",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        "return": {"type": "string"},
    }},
]

TOOL_CONVERSATION = [
    SYSTEM,
    {"role": "user", "content": "What's the weather in Zürich?"},
    {"role": "assistant", "content": None, "tool_calls": [{
        "id": "call12345", "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}},
    }]},
    {"role": "tool", "tool_call_id": "call12345", "name": "get_weather",
     "content": "{\"temperature\": 21.5, \"sky\": \"clear\"}"},
    {"role": "assistant", "content": "It is 21.5 °C and clear in Zürich."},
    {"role": "user", "content": "Thanks! And tomorrow?"},
]


def _context(family: str, messages, add_generation_prompt: bool, **extra):
    _, bos, eos, _ = FAMILIES[family]
    return {"messages": messages, "add_generation_prompt": add_generation_prompt,
            "bos_token": bos, "eos_token": eos, **extra}


@pytest.mark.parametrize("add_generation_prompt", [False, True])
@pytest.mark.parametrize("conversation", sorted(CONVERSATIONS))
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_parity(family, conversation, add_generation_prompt):
    assert_parity(FAMILIES[family][0],
                  **_context(family, CONVERSATIONS[conversation], add_generation_prompt))


@pytest.mark.parametrize("family", ["llama2", "mistral-v0.1", "mistral-v0.2", "mistral-v0.3",
                                    "gemma"])
def test_role_alternation_raises_the_template_message(family):
    expected, actual = render_both(FAMILIES[family][0],
                                   **_context(family, CONVERSATIONS["bad-alternation"], True))
    assert expected[0] == "error" and "alternate" in expected[1]
    assert actual == expected


def test_gemma_refuses_a_system_message():
    expected, actual = render_both(GEMMA, **_context("gemma", CONVERSATIONS["system-user"], True))
    assert expected == ("error", "System role not supported")
    assert actual == expected


@pytest.mark.parametrize("add_generation_prompt", [False, True])
@pytest.mark.parametrize("family", sorted(f for f, spec in FAMILIES.items() if spec[3]))
def test_tool_parity(family, add_generation_prompt):
    context = _context(family, TOOL_CONVERSATION, add_generation_prompt, tools=TOOLS)
    text = assert_parity(FAMILIES[family][0], **context)
    assert "get_weather" in text


@pytest.mark.parametrize("family", ["llama3.1", "llama3.2"])
def test_llama3_tools_in_system_message_and_date(family):
    text = assert_parity(FAMILIES[family][0],
                         **_context(family, TOOL_CONVERSATION, True, tools=TOOLS,
                                    tools_in_user_message=False, date_string="01 Jan 2025"))
    assert "Today Date: 01 Jan 2025" in text


def test_llama3_2_dates_with_strftime_now():
    text = assert_parity(LLAMA3_2, **_context("llama3.2", CONVERSATIONS["system-user"], True))
    assert "Today Date: " + datetime.now().strftime("%d %b %Y") in text


def test_llama3_1_builtin_tools_and_ipython():
    messages = [
        {"role": "system", "content": "Search when asked."},
        {"role": "user", "content": "Who won the 2022 world cup?"},
        {"role": "assistant", "tool_calls": [{"type": "function", "function": {
            "name": "brave_search", "arguments": {"query": "2022 world cup winner"}}}]},
        {"role": "ipython", "content": {"result": "Argentina"}},
        {"role": "assistant", "content": "Argentina won."},
    ]
    text = assert_parity(LLAMA3_1, **_context("llama3.1", messages, True,
                                              builtin_tools=["brave_search", "code_interpreter"]))
    assert '<|python_tag|>brave_search.call(query="2022 world cup winner")' in text
    assert "Tools: brave_search\n\n" in text


def test_llama3_1_refuses_parallel_tool_calls():
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {}}}
    messages = [{"role": "user", "content": "Weather?"},
                {"role": "assistant", "tool_calls": [call, call]}]
    expected, actual = render_both(LLAMA3_1, **_context("llama3.1", messages, False))
    assert expected == ("error", "This model only supports single tool-calls at once!")
    assert actual == expected


def test_mistral_v0_3_checks_tool_call_ids():
    messages = [dict(m) for m in TOOL_CONVERSATION[1:]]
    messages[1] = {**messages[1], "tool_calls": [{**messages[1]["tool_calls"][0], "id": "short"}]}
    expected, actual = render_both(MISTRAL_V0_3,
                                   **_context("mistral-v0.3", messages, False, tools=TOOLS))
    assert expected == ("error", "Tool call IDs should be alphanumeric strings with length 9!")
    assert actual == expected


def test_qwen3_style_thinking():
    messages = [{"role": "user", "content": "2+2?"},
                {"role": "assistant", "content": "<think>\nadd them\n</think>\n\n4"},
                {"role": "user", "content": "<tool_response>x</tool_response>"}]
    for extra in ({}, {"enable_thinking": False}):
        assert_parity(QWEN3_STYLE, **_context("qwen3-style", messages, True, **extra))


def test_smollm2_template_is_the_models():
    config = default_model_dir() / "tokenizer_config.json"
    assert json.loads(config.read_text())["chat_template"] == SMOLLM2


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_template_parses(family):
    ChatTemplate(FAMILIES[family][0])


# ---------------------------------------------------------------------------------------------
# jinja2 semantics on small templates.
# ---------------------------------------------------------------------------------------------

SNIPPETS = [
    # Whitespace control, trim_blocks, lstrip_blocks, comments, line breaks.
    "hello {{ 'x' }}  {% if true %} a {% endif %}\n  {% for i in [1,2] %}\n {{ i }}\n{% endfor %}\n",
    "  {% if true %}\n  x\n  {% endif %}\n  {#- c #}  y  {# c2 -#}\n\n z {%+ if true %}q{% endif +%}\n"
    "  r\t{%- if 1 %}\n s {% endif -%} \n\n t",
    "a\r\nb\rc\n{% if 1 %}\r\nd{% endif %}\n",
    "{{- ' a ' -}}  \n  {{ 'b' }}  {#- x -#}  c \n",
    "  {# only a comment #}\nline\n    {% set x = 1 %}\n    {{ x }}",
    # Literals and escapes.
    "{{ 'a\\tb\\u00e9\\x41\\101\\'\\\"\\\\\\d' }} {{ \"x\" 'y' }}",
    "{{ 0x1F }} {{ 0b101 }} {{ 0o17 }} {{ 1_000 }} {{ 1_0.5e1_0 }} {{ 1e3 }} {{ 2.50 }}",
    "{{ [1,'a',none,true,1.5,{'k':'v'}] }} {{ ('a',) }} {{ (1,2) }} {{ 'it\\'s' }} "
    "{{ ['it\\'s', \"a\\\"b\", 'x\\ny', 'é\\u00a0'] }}",
    "{{ 1.0 }} {{ 1e20 }} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ 1/3 }} {{ -0.0 }}",
    # Operators.
    "{{ 10/2 }} {{ 7//2 }} {{ -7//2 }} {{ -7%3 }} {{ 7 % -3 }} {{ -7.5 // 2 }} {{ 7.5 % -2 }} "
    "{{ 2**10 }} {{ 2**-1 }} {{ 2 ** 0.5 }} {{ 10 // 3.0 }} {{ -(3) }} {{ +2 }}",
    "{{ 'a' * 3 }} {{ [1] * 2 }} {{ 3 * 'b' }} {{ (1,) + (2,) }} {{ [1] + [2] }} {{ 'x' ~ 1 ~ none }}",
    "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' in 'cat' }} {{ 1 not in [1] }} {{ 'k' in {'k': 1} }} "
    "{{ [1, [2]] == [1, [2]] }} {{ {'a': 1, 'b': 2} == {'b': 2, 'a': 1} }} {{ 'b' >= 'a' }}",
    "{{ true }} {{ none }} {{ True }} {{ 1 == 1.0 }} {{ true == 1 }} {{ '1' == 1 }} {{ not 0 }}",
    "{{ 0 or 'x' }} {{ 1 and [] }} {{ none or none }} {{ x if false }}|{{ 'y' if true }} "
    "{{ 'a' if 0 else 'b' if 1 else 'c' }}",
    # Undefined.
    "{{ 'a' in u }}|{{ u == u }}|{{ u|length }}|{{ u is iterable }}|{{ u is sequence }}|"
    "{{ u|first }}|{{ u|list }}|{{ u }}|{{ u is defined }}|{{ u|default('d') }}",
    "{{ none.x }}|{{ (none.x) is defined }}|{{ d.missing is defined }}|{{ d['missing'] }}",
    "{{ u.x }}",
    "{{ u + 1 }}",
    # Loops.
    "{% for x in [1,2,3] if x > 1 %}{{ loop.index }}/{{ loop.length }}{{ loop.first }}"
    "{{ loop.last }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.previtem }}{{ loop.nextitem }};"
    "{% else %}E{% endfor %}",
    "{% for x in [] %}a{% else %}E{% endfor %}{% for x in [1] if x > 5 %}a{% else %}F{% endfor %}",
    "{% for x in [1,2,3,4] %}{% if x == 2 %}{% continue %}{% endif %}{{ x }}"
    "{% if x == 3 %}{% break %}{% endif %}{% endfor %}",
    "{% for a, b in [[1,2],[3,4]] %}{{ a }}{{ b }}{% endfor %}{% for (k, v) in d|items %}{{ k }}{% endfor %}",
    "{% for x in [1,2,3] %}{{ loop.cycle('a','b') }}{% for y in 'ab' %}{{ loop.index }}{% endfor %}"
    "{{ loop.index }}{% endfor %}",
    "{% for c in 'héllo' %}{{ c }}.{% endfor %}{% for k in d %}{{ k }}{% endfor %}",
    # Scoping and assignment.
    "{% for i in [1,2] %}{% if i == 2 %}[{{ x }}]{% endif %}{% set x = i %}{% endfor %}",
    "{% set x = 5 %}{% for i in [1,2] %}[{{ x }}]{% set x = i %}[{{ x }}]{% endfor %}{{ x }}",
    "{% if true %}{% set y = 3 %}{% endif %}{{ y }}{% set a, b = 1, 2 %}{{ a }}{{ b }}"
    "{% set c = 1, 2 %}{{ c }}",
    "{% set ns = namespace(a=1, items=[]) %}{% for i in range(3) %}{% set ns.a = ns.a + i %}"
    "{% set ns.items = ns.items + [i] %}{% endfor %}{{ ns.a }} {{ ns.items }} {{ ns.b is defined }}",
    "{% set ns = namespace(d) %}{{ ns.k }}",
    "{% generation %}{% set g = 1 %}in:{{ g }}{% endgeneration %} out:{{ g }}",
    # Filters.
    "{{ x|tojson }}|{{ x|tojson(indent=2) }}|{{ x|tojson(sort_keys=true) }}|"
    "{{ x|tojson(ensure_ascii=true) }}|{{ x|tojson(separators=(',', ':')) }}|"
    "{{ x|tojson(indent='\\t') }}|{{ []|tojson(indent=2) }}",
    "{{ [3,1]|join(', ') }} {{ d|join }} {{ [{'a':1},{'a':2}]|join(',', attribute='a') }} "
    "{{ ['a','b']|join(attribute='x') }}",
    "{{ '  x  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ 'ab'|upper }}|{{ 'AB'|lower }}|"
    "{{ 'hELLO wORLD-x(y'|title }}|{{ 'hELLO'|capitalize }}|{{ 'aaa'|replace('a', 'b', 2) }}",
    "{{ [1,2]|first }} {{ [1,2]|last }} {{ 'ab'|last }} {{ []|first is defined }} "
    "{{ [1,2]|length }} {{ 'héllo'|count }} {{ d|length }} {{ 'ab'|list }} {{ d|list }}",
    "{{ '3'|int + 1 }} {{ '3.9'|int }} {{ 'x'|int(7) }} {{ 3.9|int }} {{ true|int }} "
    "{{ '0x1f'|int(base=16) }} {{ '1_000'|int }} {{ '1e3'|float }} {{ 'x'|float }} {{ 2|float }}",
    "{{ 5|d(3) }} {{ u|d(3) }} {{ ''|default('x', true) }} {{ none|default('x') }} "
    "{{ 1|string ~ [1]|string }} {{ 'a\\nb'|indent(2) }}|{{ 'a\\nb\\n\\nc'|indent(2, true) }}|"
    "{{ 'a\\n\\nb'|indent('--', blank=true) }}",
    "{{ [1,2]|map('string')|join(',') }}|{{ []|map(attribute='x')|list }}|"
    "{{ [{'a':{'b':1}},{'a':{}}]|map(attribute='a.b')|list }}|"
    "{{ [{'a':1},{}]|map(attribute='a', default=5)|list }}|{{ ['a']|map('upper')|first }}",
    "{{ [1,0,2]|select|list }}|{{ [1,2,3]|select('odd')|list }}|{{ [1,2,3]|reject('equalto', 2)|list }}|"
    "{{ m|selectattr('role', 'equalto', 'user')|list|length }}|{{ m|rejectattr('role')|list }}|"
    "{{ m|selectattr('role', 'in', ['user', 'x'])|map(attribute='role')|join }}",
    "{% if m|selectattr('role', 'equalto', 'nobody') %}generators are true{% endif %}",
    "{{ [1,2]|selectattr('x')|length }}",
    "{{ u|reverse|list }}|{{ 'ab'|reverse }}|{{ d|reverse|list }}|{{ [1,2]|reverse|list }}|"
    "{{ u|items|list }}|{{ d|items|list }}",
    # Tests.
    "{{ 's' is string }}{{ 1 is number }}{{ true is number }}{{ d is mapping }}{{ 1 is integer }}"
    "{{ 1.0 is float }}{{ true is boolean }}{{ false is false }}{{ none is none }}"
    "{{ [] is sequence }}{{ 'a' is iterable }}{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}"
    "{{ 1 is in [1] }}{{ 2 is eq 2 }}{{ 2 is lt 3 }}{{ 2 is not ge 3 }}{{ none is sameas none }}"
    "{{ range is callable }}{{ strftime_now is defined }}",
    # Methods.
    "{{ '  x  '.strip() }}|{{ 'xxy'.lstrip('x') }}|{{ 'yxx'.rstrip('x') }}|{{ 'a,b'.split(',') }}|"
    "{{ ' a b  c '.split() }}|{{ 'a,b,,c'.split(',', 2) }}|{{ ' a b c '.split(none, 1) }}|"
    "{{ 'Hello World'.title() }}|{{ 'hello wORLD'.capitalize() }}|{{ 'a.b'.replace('.', '-') }}|"
    "{{ 'abc'.startswith(('x','a')) }}|{{ 'abc'.endswith('c') }}|{{ 'Ab'.upper() }}{{ 'Ab'.lower() }}",
    "{{ d.get('k') }} {{ d.get('x') }} {{ d.get('x', 1) }} {{ d.keys()|list }} {{ d.values()|list }} "
    "{{ d.items()|list }}",
    "{{ 'ß'.upper() }} {{ 'ǆa'.title() }} {{ 'ßa'|capitalize }} {{ 'ΣΑΣ'.lower() }} {{ 'éa'|upper }}",
    # Indexing and slicing.
    "{{ 'abc'[::-1] }} {{ 'abc'[1:] }} {{ [1,2,3][-1] }} {{ [1,2,3][5] is defined }} {{ [1,2][1:] }} "
    "{{ [1,2,3][::2] }} {{ [1,2,3][-2:] }} {{ 'héllo'[1:3] }} {{ [1,2,3][::-1] }} {{ [1,2][5:] }} "
    "{{ 'héllo'[1] }} {{ [1,2].0 }} {{ d['k'] }} {{ d.k }} {{ d['items'] }}",
    # Errors both must raise.
    "{{ 'a' + 1 }}", "{{ 1/0 }}", "{{ 'a' < 1 }}", "{{ -'a' }}", "{{ range(200000)|length }}",
    "{{ [1]|last|upper }}{{ raise_exception('custom: ' ~ 42) }}",
    "{% set x = [1] %}{% set x.y = 2 %}", "{% for a, b in [[1]] %}{% endfor %}",
    "{{ x|tojson }}{{ u|tojson }}",
]


@pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")
@pytest.mark.parametrize("source", SNIPPETS)
def test_snippet_parity(source):
    assert_parity(source, messages=[], d={"k": "v", "items": 3},
                  x={"b": "é😀\n\"", "a": [1, 2.5, None, True, 1e20, 1e-07]},
                  m=[{"role": "user"}, {"role": "assistant"}, {"role": "user"}])


def _random_layout(rng: random.Random, depth: int = 0) -> str:
    """Text, tags and comments with every kind of whitespace control, nested."""
    texts = ["", " ", "  ", "\t", "\n", "\n\n", " \n ", "a", "b c", "\r\n", " x\n  ", "\u00a0",
             "\u3000\n"]
    sign = lambda: rng.choice(["", "", "-", "+"])  # noqa: E731
    roll = rng.random()
    if roll < 0.35 or depth >= 3:
        return rng.choice(texts)
    if roll < 0.5:
        return "{{" + sign().strip("+") + " 'v' " + sign().strip("+") + "}}"
    if roll < 0.6:
        return "{#" + sign() + " c " + sign() + "#}"
    body = "".join(_random_layout(rng, depth + 1) for _ in range(rng.randint(0, 4)))
    if roll < 0.8:
        other = "".join(_random_layout(rng, depth + 1) for _ in range(rng.randint(0, 3)))
        return (f"{{%{sign()} if {rng.choice(['true', 'false'])} {sign()}%}}{body}"
                f"{{%{sign()} else {sign()}%}}{other}{{%{sign()} endif {sign()}%}}")
    return f"{{%{sign()} for i in [1, 2] {sign()}%}}{body}{{%{sign()} endfor {sign()}%}}"


def test_whitespace_control_matches_on_random_layouts():
    rng = random.Random(1234)
    for _ in range(1000):
        source = "".join(_random_layout(rng) for _ in range(rng.randint(1, 6)))
        assert_parity(source, messages=[])


def test_tojson_keeps_the_key_order_and_unicode():
    tools = [{"z": 1, "a": {"y": "ü", "b": [1.0, 2]}}]
    source = "{{ tools|tojson }}"
    assert assert_parity(source, messages=[], tools=tools) == \
        '[{"z": 1, "a": {"y": "ü", "b": [1.0, 2]}}]'


# ---------------------------------------------------------------------------------------------
# What the engine does not support fails at parse time, naming the line and column.
# ---------------------------------------------------------------------------------------------

UNSUPPORTED = [
    ("{{ x|wordwrap(10) }}", 1, 6, "filter 'wordwrap'"),
    ("line\n  {{ x is escaped }}", 2, 11, "test 'escaped'"),
    ("{{ x.append(1) }}", 1, 5, "method 'append'"),
    ("{{ lipsum(2) }}", 1, 4, "function 'lipsum'"),
    ("{% macro m() %}x{% endmacro %}", 1, 4, "'{% macro %}' tag"),
    ("{% include 'other' %}", 1, 4, "'{% include %}' tag"),
    ("{% raw %}{{ x }}{% endraw %}", 1, 4, "'{% raw %}' tag"),
    ("{% set x %}block{% endset %}", 1, 4, "block assignments"),
    ("{% for x in y recursive %}{% endfor %}", 1, 15, "recursive loops"),
    ("{{ '%s' % x }}", 1, 9, "printf-style"),
    ("{{ f(*args) }}", 1, 4, "function 'f'"),
    ("{{ x|map('wordcount')|list }}", 1, 10, "filter 'wordcount'"),
    ("{{ x|selectattr('a', 'escaped') }}", 1, 22, "test 'escaped'"),
    ("{% if x %}\n{% for y in z %}\n", 2, 4, "unclosed '{% for %}'"),
    ("{% if x %}{% endfor %}", 1, 14, "unexpected '{% endfor %}'"),
    ("{% frobnicate %}", 1, 4, "unknown tag 'frobnicate'"),
    ("{% break %}", 1, 4, "outside a for loop"),
    ("{{ x ]}}", 1, 6, "unexpected ']'"),
    ("\n\n   {{ 'unterminated }}", 3, 7, "unterminated string"),
    ("{{ x", 1, 1, "unclosed tag"),
    ("{{ x }", 1, 6, "unexpected '}'"),
    ("{# comment", 1, 1, "unclosed comment"),
    ("{{ a b }}", 1, 6, "expected end of print statement"),
]


@pytest.mark.parametrize("source,line,column,message", UNSUPPORTED)
def test_unsupported_fails_at_parse_time(source, line, column, message):
    with pytest.raises(LlmcRuntimeError) as error:
        ChatTemplate(source)
    assert str(error.value).startswith(f"chat template:{line}:{column}: ")
    assert message in str(error.value)


def test_render_errors_name_their_location():
    template = ChatTemplate("line one\n{{ messages[0]['content'] + 1 }}")
    with pytest.raises(LlmcRuntimeError,
                       match=re.escape('chat template:2:27: can only concatenate str (not "int") '
                                       "to str")):
        template.render([{"role": "user", "content": "x"}])
