"""Tool calling in `llmc serve`, through the official `openai` client.

The model is the small random Llama with the default model's tokenizer
(llmc.testing.server.write_chat_model), served with the chat templates of three tool-call
formats (test_chat_template.py's copies): Qwen2.5 (Hermes: <tool_call> JSON), Llama 3.1
(a JSON object with "parameters") and Mistral v0.3 ([TOOL_CALLS] and a JSON list). Its words
are random, so what it calls is forced:

  * tool_choice "required" and a named function are enforced by a grammar: every response is
    a call of an offered function whose arguments validate against its parameters;
  * tool_choice "auto" reads the model's own format out of its text: a `guided_choice` of one
    string makes the model write a call in that format, which must come back as tool_calls.

Each streamed and not; the streamed deltas (id and name first, then argument fragments) must
add up to the same calls. With a Qwen3-style template, <think> text is reasoning_content and a
call written inside it still comes back as a call. The calls then go back into the conversation with the tool's
result and render through the template again. Refusals: tool_choice "auto" on a template
with no known format, and a named function that is not offered, are 400s.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import openai
import pytest

from llmc.testing.server import Server, compile_chat_model
from llmc.tokenizer import Tokenizer
from test_chat_template import LLAMA3_1, MISTRAL_V0_3, QWEN2_5, QWEN3_STYLE, REFERENCE

ROOT = Path(__file__).resolve().parents[2]
LLMC = Path(os.environ.get("LLMC_BUILD_DIR", ROOT / "build")) / "bin" / "llmc"

WEATHER = {"type": "object",
           "properties": {"city": {"type": "string", "maxLength": 12},
                          "unit": {"enum": ["celsius", "fahrenheit"]},
                          "days": {"type": "integer", "minimum": 1, "maximum": 7}},
           "required": ["city", "unit"], "additionalProperties": False}
NOW = {"type": "object", "properties": {"zone": {"enum": ["utc", "local"]}},
       "required": ["zone"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather",
                                           "description": "The weather in a city",
                                           "parameters": WEATHER}},
         {"type": "function", "function": {"name": "now", "description": "The time",
                                           "parameters": NOW}}]
SCHEMAS = {"get_weather": WEATHER, "now": NOW}
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]

# The call each format's template teaches, as the model would write it.
NATIVE_CALLS = {
    "hermes": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", '
              '"unit": "celsius"}}\n</tool_call>',
    "llama3_json": '{"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}}',
    "mistral": '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris", '
               '"unit": "celsius"}}]',
}
TEMPLATES = {"hermes": QWEN2_5, "llama3_json": LLAMA3_1, "mistral": MISTRAL_V0_3}


@pytest.fixture(scope="module")
def artifact(tmp_path_factory) -> Path:
    return compile_chat_model(LLMC, tmp_path_factory.mktemp("tools"))


@pytest.fixture(scope="module", params=sorted(TEMPLATES))
def served(request, artifact, tmp_path_factory):
    """(format, server) with the format's chat template, which the server reads it from."""
    template = tmp_path_factory.mktemp("template") / "chat_template.jinja"
    template.write_text(TEMPLATES[request.param])
    with Server(LLMC, artifact, "--chat-template", str(template), "--threads", "1",
                "--kv-blocks", "512") as server:
        yield request.param, server


def client_of(server: Server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


def calls_of(client: openai.OpenAI, stream: bool, **kwargs) -> tuple[list[dict], str | None, str]:
    """The calls of one chat completion ({id, name, arguments}), its content and its
    finish_reason; streamed, the deltas are joined as a client would."""
    kwargs = {"model": "", "messages": QUESTION, "tools": TOOLS, "max_tokens": 200, **kwargs}
    if not stream:
        choice = client.chat.completions.create(**kwargs).choices[0]
        calls = [{"id": call.id, "name": call.function.name,
                  "arguments": call.function.arguments}
                 for call in choice.message.tool_calls or []]
        return calls, choice.message.content, choice.finish_reason
    calls, content, reason = [], "", None
    for chunk in client.chat.completions.create(stream=True, **kwargs):
        choice = chunk.choices[0]
        content += choice.delta.content or ""
        for delta in choice.delta.tool_calls or []:
            if delta.id:  # a call starts: its id and name come first
                assert delta.index == len(calls)
                calls.append({"id": delta.id, "name": delta.function.name,
                              "arguments": delta.function.arguments or ""})
            else:
                calls[delta.index]["arguments"] += delta.function.arguments
        reason = choice.finish_reason or reason
    return calls, content or None, reason


def check_calls(calls: list[dict], format: str) -> None:
    assert calls
    for call in calls:
        jsonschema.validate(json.loads(call["arguments"]), SCHEMAS[call["name"]])
        assert len(call["id"]) == 9 if format == "mistral" else call["id"].startswith("call_")


@pytest.mark.parametrize("stream", [False, True])
def test_named_function_is_always_called(served, stream):
    format, server = served
    calls, content, reason = calls_of(
        client_of(server), stream, temperature=1.0, seed=4,
        tool_choice={"type": "function", "function": {"name": "get_weather"}})
    assert [call["name"] for call in calls] == ["get_weather"]
    check_calls(calls, format)
    assert content is None and reason == "tool_calls"


@pytest.mark.parametrize("stream", [False, True])
def test_required_always_calls(served, stream):
    format, server = served
    for seed in range(3):
        calls, _, reason = calls_of(client_of(server), stream, temperature=1.0, seed=seed,
                                    tool_choice="required", parallel_tool_calls=False)
        assert len(calls) == 1 and reason == "tool_calls"
        check_calls(calls, format)


@pytest.mark.parametrize("stream", [False, True])
def test_auto_reads_the_models_own_format(served, stream):
    format, server = served
    calls, content, reason = calls_of(client_of(server), stream, tool_choice="auto",
                                      extra_body={"guided_choice": [NATIVE_CALLS[format]]})
    assert [(call["name"], json.loads(call["arguments"])) for call in calls] == [
        ("get_weather", {"city": "Paris", "unit": "celsius"})]
    check_calls(calls, format)
    assert content is None and reason == "tool_calls"


def test_text_is_content_and_none_calls_nothing(served):
    format, server = served
    client = client_of(server)
    calls, content, reason = calls_of(client, False, tool_choice="auto",
                                      extra_body={"guided_choice": ["It is sunny."]})
    assert (calls, content, reason) == ([], "It is sunny.", "stop")
    calls, content, _ = calls_of(client, False, tool_choice="none",
                                 extra_body={"guided_choice": [NATIVE_CALLS[format]]})
    assert calls == [] and content == NATIVE_CALLS[format]


def test_calls_and_results_go_back_through_the_template(served):
    format, server = served
    client = client_of(server)
    calls, _, _ = calls_of(client, False, tool_choice="required", parallel_tool_calls=False)
    history = QUESTION + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call["id"], "type": "function",
             "function": {"name": call["name"], "arguments": call["arguments"]}}
            for call in calls]},
        {"role": "tool", "tool_call_id": calls[0]["id"], "content": '{"sky": "clear"}'}]
    response = client.chat.completions.create(model="", messages=history, tools=TOOLS,
                                              max_tokens=4, temperature=0)
    assert response.choices[0].finish_reason in ("stop", "length", "tool_calls")


def test_the_tools_are_rendered_as_transformers_passes_them(artifact, tmp_path):
    """The prompt is the template rendered with `tools` (Jinja2 as the reference)."""
    template = tmp_path / "chat_template.jinja"
    template.write_text(QWEN2_5)
    with Server(LLMC, artifact, "--chat-template", str(template), "--threads", "1") as server:
        response = client_of(server).chat.completions.create(
            model="", messages=QUESTION, tools=TOOLS, max_tokens=1, temperature=0)
    text = REFERENCE.from_string(QWEN2_5).render(messages=QUESTION, tools=TOOLS,
                                                 add_generation_prompt=True)
    tokenizer = Tokenizer(artifact / "tokenizer.json")
    assert response.usage.prompt_tokens == len(tokenizer.encode(text, add_special_tokens=False))


def test_refusals(artifact):
    with Server(LLMC, artifact, "--threads", "1") as server:  # SmolLM2's template: no tools
        client = client_of(server)
        with pytest.raises(openai.BadRequestError) as error:
            client.chat.completions.create(model="", messages=QUESTION, tools=TOOLS,
                                           max_tokens=4)
        assert error.value.body["param"] == "tool_choice"
        with pytest.raises(openai.BadRequestError) as error:
            client.chat.completions.create(
                model="", messages=QUESTION, tools=TOOLS, max_tokens=4,
                tool_choice={"type": "function", "function": {"name": "fly"}})
        assert error.value.body["param"] == "tool_choice"
        # required needs no format of the model's: the grammar writes the calls.
        calls, _, reason = calls_of(client, False, tool_choice="required")
        assert reason == "tool_calls"
        check_calls(calls, "hermes")


@pytest.fixture(scope="module")
def reasoning_server(artifact, tmp_path_factory):
    """A Qwen3-style template: <think> blocks and Hermes calls."""
    template = tmp_path_factory.mktemp("qwen3") / "chat_template.jinja"
    template.write_text(QWEN3_STYLE)
    with Server(LLMC, artifact, "--chat-template", str(template), "--threads", "1") as server:
        yield server


def reasoning_of(client: openai.OpenAI, stream: bool, output: str):
    """(reasoning_content, content, calls, finish_reason) of an output forced to `output`."""
    kwargs = {"model": "", "messages": QUESTION, "tools": TOOLS, "max_tokens": 200,
              "extra_body": {"guided_choice": [output]}}
    if not stream:
        choice = client.chat.completions.create(**kwargs).choices[0]
        calls = [(call.function.name, json.loads(call.function.arguments))
                 for call in choice.message.tool_calls or []]
        return (choice.message.model_extra.get("reasoning_content"), choice.message.content,
                calls, choice.finish_reason)
    reasoning, content, calls, reason = "", "", [], None
    for chunk in client.chat.completions.create(stream=True, **kwargs):
        choice = chunk.choices[0]
        reasoning += (choice.delta.model_extra or {}).get("reasoning_content") or ""
        content += choice.delta.content or ""
        for delta in choice.delta.tool_calls or []:
            if delta.id:
                calls.append([delta.function.name, delta.function.arguments or ""])
            else:
                calls[delta.index][1] += delta.function.arguments
        reason = choice.finish_reason or reason
    return (reasoning or None, content or None,
            [(name, json.loads(arguments)) for name, arguments in calls], reason)


@pytest.mark.parametrize("stream", [False, True])
def test_thinking_is_reasoning_content(reasoning_server, stream):
    client = client_of(reasoning_server)
    assert reasoning_of(client, stream, "<think>\nThey want the weather.\n</think>\n\nSunny.") \
        == ("\nThey want the weather.\n", "Sunny.", [], "stop")
    # A call written while thinking is a call all the same.
    assert reasoning_of(client, stream, "<think>\nI will look.\n" + NATIVE_CALLS["hermes"] +
                        "\n</think>\n\n") == (
        "\nI will look.", None, [("get_weather", {"city": "Paris", "unit": "celsius"})],
        "tool_calls")
