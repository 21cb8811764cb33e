"""Structured outputs in `llmc serve`: JSON schemas, JSON objects, regexes, choices and EBNF
grammars, through the official `openai` client.

Every constrained output must parse and validate against its schema (the `jsonschema`
package) on two models: the default model (SmolLM2-135M-Instruct) and a small random Llama
with the same tokenizer (llmc.testing.server.write_chat_model), whose words are random: the
grammar alone must make its output valid. The schemas bound every string, array and number,
so that even the random model's output is complete well within max_tokens. Checked too:
streaming (the pieces add up to a valid document), n > 1, /v1/completions, and that an
output constraint the server cannot compile, or two at once, is one 400 naming the field,
after which the server goes on serving; so is a schema keyword the grammar would not enforce
(uniqueItems), rather than an output that ignores it.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import jsonschema
import openai
import pytest

from llmc.testing.server import Server, compile_chat_model, default_model_dir

ROOT = Path(__file__).resolve().parents[2]
LLMC = Path(os.environ.get("LLMC_BUILD_DIR", ROOT / "build")) / "bin" / "llmc"

POINT = {"type": "object",
         "properties": {"x": {"type": "integer", "minimum": 0, "maximum": 100},
                        "y": {"type": "integer", "minimum": 0, "maximum": 100}},
         "required": ["x", "y"], "additionalProperties": False}

SCHEMAS = {
    "nested objects": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 12},
            "address": {"type": "object",
                        "properties": {"city": {"type": "string", "maxLength": 10},
                                       "zip": {"type": "integer", "minimum": 10000,
                                               "maximum": 99999}},
                        "required": ["city", "zip"], "additionalProperties": False}},
        "required": ["name", "address"], "additionalProperties": False},
    "arrays": {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 8},
                                "minItems": 1, "maxItems": 3}},
        "required": ["tags"], "additionalProperties": False},
    "enums and bounded numbers": {
        "type": "object",
        "properties": {"color": {"enum": ["red", "green", "blue"]},
                       "count": {"type": "integer", "minimum": -3, "maximum": 9},
                       "ok": {"type": "boolean"}},
        "required": ["color", "count", "ok"], "additionalProperties": False},
    "anyOf": {
        "type": "object",
        "properties": {"value": {"anyOf": [{"type": "integer", "minimum": -5, "maximum": 5},
                                           {"type": "boolean"}, {"type": "null"},
                                           {"enum": ["none", "all"]}]}},
        "required": ["value"], "additionalProperties": False},
    "$ref": {
        "$defs": {"point": POINT},
        "type": "object",
        "properties": {"start": {"$ref": "#/$defs/point"}, "end": {"$ref": "#/$defs/point"}},
        "required": ["start", "end"], "additionalProperties": False},
}

MESSAGES = [{"role": "user", "content": "Describe a place as JSON."}]


def start_server(artifact: Path):
    return Server(LLMC, artifact, "--kv-blocks", "256", "--threads", "1")


@pytest.fixture(scope="module")
def random_server(tmp_path_factory):
    with start_server(compile_chat_model(LLMC, tmp_path_factory.mktemp("random"))) as server:
        yield server


@pytest.fixture(scope="module")
def default_server(tmp_path_factory):
    artifact = tmp_path_factory.mktemp("default") / "model.llmc"
    subprocess.run([str(LLMC), "compile", str(default_model_dir() / "model.onnx"), "-o",
                    str(artifact), "--quiet"], check=True)
    with start_server(artifact) as server:
        yield server


@pytest.fixture(params=["random", "default"])
def client(request) -> openai.OpenAI:
    server = request.getfixturevalue(f"{request.param}_server")
    return openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


def schema_format(schema: dict) -> dict:
    return {"type": "json_schema",
            "json_schema": {"name": "answer", "schema": schema, "strict": True}}


@pytest.mark.parametrize("name", SCHEMAS)
def test_json_schema_outputs_validate(client, name):
    schema = SCHEMAS[name]
    response = client.chat.completions.create(
        model="", messages=MESSAGES, response_format=schema_format(schema), max_tokens=300,
        temperature=0)
    choice = response.choices[0]
    assert choice.finish_reason == "stop", choice.message.content
    jsonschema.validate(json.loads(choice.message.content), schema)


def test_sampled_samples_all_validate(random_server):
    client = openai.OpenAI(base_url=random_server.base_url, api_key="none", max_retries=0)
    schema = SCHEMAS["enums and bounded numbers"]
    response = client.chat.completions.create(
        model="", messages=MESSAGES, response_format=schema_format(schema), max_tokens=300,
        temperature=1.0, n=4, seed=7)
    assert len(response.choices) == 4
    for choice in response.choices:
        assert choice.finish_reason == "stop"
        jsonschema.validate(json.loads(choice.message.content), schema)


def test_streamed_output_adds_up_to_a_valid_document(random_server):
    client = openai.OpenAI(base_url=random_server.base_url, api_key="none", max_retries=0)
    schema = SCHEMAS["$ref"]
    texts, reasons = ["", ""], [None, None]
    for chunk in client.chat.completions.create(
            model="", messages=MESSAGES, response_format=schema_format(schema), max_tokens=300,
            n=2, seed=3, stream=True):
        for choice in chunk.choices:
            texts[choice.index] += choice.delta.content or ""
            reasons[choice.index] = choice.finish_reason or reasons[choice.index]
    assert reasons == ["stop", "stop"]
    for text in texts:
        jsonschema.validate(json.loads(text), schema)


def test_completions_take_guided_json(random_server):
    client = openai.OpenAI(base_url=random_server.base_url, api_key="none", max_retries=0)
    schema = SCHEMAS["arrays"]
    response = client.completions.create(model="", prompt="Tags:", max_tokens=200,
                                         temperature=0, extra_body={"guided_json": schema})
    assert response.choices[0].finish_reason == "stop"
    jsonschema.validate(json.loads(response.choices[0].text), schema)


def test_json_object(default_server):
    client = openai.OpenAI(base_url=default_server.base_url, api_key="none", max_retries=0)
    response = client.chat.completions.create(
        model="", messages=[{"role": "user", "content": "Give a JSON object with a name."}],
        response_format={"type": "json_object"}, max_tokens=200, temperature=0)
    assert response.choices[0].finish_reason == "stop"
    assert isinstance(json.loads(response.choices[0].message.content), dict)


def test_regex_choice_and_grammar(client):
    def complete(extra: dict, **kwargs) -> str:
        response = client.completions.create(model="", prompt="Answer:", max_tokens=40,
                                             extra_body=extra, **kwargs)
        assert response.choices[0].finish_reason == "stop"
        return response.choices[0].text

    assert re.fullmatch(r"[0-9]{3}-[a-z]{2,4}",
                        complete({"guided_regex": "[0-9]{3}-[a-z]{2,4}"}, temperature=0))
    choices = ["alpha", "beta", "gamma delta"]
    for seed in range(3):
        assert complete({"guided_choice": choices}, seed=seed) in choices
    grammar = 'root ::= "(" digit digit? ( "+" digit )? ")"\ndigit ::= [0-9]'
    assert re.fullmatch(r"\([0-9][0-9]?(\+[0-9])?\)",
                        complete({"guided_grammar": grammar}, temperature=0))


@pytest.mark.parametrize("extra, param", [
    ({"response_format": schema_format({"type": 7})}, "response_format"),
    ({"response_format": {"type": "json_schema"}}, "response_format"),
    ({"response_format": {"type": "xml"}}, "response_format"),
    ({"guided_json": "{not json"}, "guided_json"),
    ({"guided_regex": "(ab"}, "guided_regex"),
    ({"guided_json": {"type": "array", "uniqueItems": True}}, "guided_json"),
    ({"guided_choice": []}, "guided_choice"),
    ({"guided_grammar": "root ::= "}, "guided_grammar"),
    ({"guided_json": {"type": "object"}, "guided_regex": "a+"}, "guided_regex"),
])
def test_bad_constraints_are_400_and_the_server_goes_on(random_server, extra, param):
    client = openai.OpenAI(base_url=random_server.base_url, api_key="none", max_retries=0)
    with pytest.raises(openai.BadRequestError) as error:
        client.completions.create(model="", prompt="x", max_tokens=4, extra_body=extra)
    assert error.value.body["param"] == param, error.value.body
    ok = client.completions.create(model="", prompt="x", max_tokens=4,
                                   extra_body={"guided_choice": ["fine"]})
    assert ok.choices[0].text == "fine"
