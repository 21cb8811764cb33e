"""`llmc serve` on loopback, driven by the official `openai` client and by raw HTTP.

The model is a small random Llama with the default model's tokenizer and ChatML chat
template (llmc.testing.server.write_chat_model): its text is gibberish, but the API is
exercised end to end, fast. Checked:

  * completions and chat, streaming and not: the streamed pieces add up to the whole text,
    [DONE] ends every stream, usage comes last when asked, and greedy text equals the
    engine's own greedy tokens (llmc.engine, same artifact);
  * the chat prompt is the chat template's rendering (its token count equals Jinja2's
    rendering tokenized), n > 1, stop strings (the text ends before the stop, finish_reason
    "stop"; or kept with include_stop_str_in_output), seeds (same seed, same text),
    logprobs (tokens named by id with return_tokens_as_token_ids), logit_bias, min_tokens,
    allowed_token_ids, skip_special_tokens, truncate_prompt_tokens and usage in every
    streamed chunk (continuous_usage_stats);
  * echo (streamed too) and vLLM's prompt_logprobs: the prompt tokens' logprobs are the
    engine's own (llmc.engine, checked against onnxruntime in test_prompt_logprobs.py), and
    an echo of a completion's own tokens scores them as that completion's logprobs said
    (lm-eval-harness's loglikelihood request);
  * /tokenize and /detokenize give what `tokenizers` gives on the same tokenizer.json (the
    messages rendered by Jinja2);
  * every bad input gets an OpenAI-style JSON error with its status (400, 401, 404, 413, 429
    with Retry-After) and the server goes on serving;
  * a client that disconnects mid-stream aborts its request: /metrics shows its KV blocks
    freed at once;
  * SIGTERM lets a request in flight finish, then the server exits 0.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jinja2
import openai
import pytest
import tokenizers

from llmc.engine import Engine
from llmc.runtime import Model
from llmc.testing.server import Server, compile_chat_model
from llmc.tokenizer import Tokenizer

ROOT = Path(__file__).resolve().parents[2]
LLMC = Path(os.environ.get("LLMC_BUILD_DIR", ROOT / "build")) / "bin" / "llmc"
API_KEY = "test-key"


@pytest.fixture(scope="module")
def artifact(tmp_path_factory) -> Path:
    return compile_chat_model(LLMC, tmp_path_factory.mktemp("server"))


@pytest.fixture(scope="module")
def server(artifact):
    with Server(LLMC, artifact, "--api-key", API_KEY, "--max-body-bytes", "1MiB",
                "--kv-blocks", "256", "--threads", "1") as server:
        yield server


@pytest.fixture(scope="module")
def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=API_KEY, max_retries=0)


@pytest.fixture(scope="module")
def tokenizer(artifact) -> Tokenizer:
    return Tokenizer(artifact / "tokenizer.json")


def raw_request(server: Server, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 exchange on a fresh connection: status, headers (lower-case), body."""
    host, port = server.url.removeprefix("http://").split(":")
    headers = {"Host": host, "Connection": "close", **(headers or {})}
    if body is not None:
        headers.setdefault("Content-Type", "application/json")
        headers["Content-Length"] = str(len(body))
    request = f"{method} {path} HTTP/1.1\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
    with socket.create_connection((host, int(port)), timeout=60) as connection:
        connection.sendall(request.encode() + (body or b""))
        response = b""
        while chunk := connection.recv(65536):
            response += chunk
    head, _, payload = response.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    fields = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    if fields.get("transfer-encoding") == "chunked":
        payload = dechunk(payload)
    return status, fields, payload


def dechunk(payload: bytes) -> bytes:
    body = b""
    while payload:
        size_line, _, payload = payload.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        body, payload = body + payload[:size], payload[size + 2:]
    return body


def post(server: Server, path: str, body, key: str | None = API_KEY):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return raw_request(server, "POST", path, data, headers)


def sse_events(payload: bytes) -> list[str]:
    return [line[len("data: "):] for line in payload.decode().split("\n\n") if line]


# --- completions and chat ---------------------------------------------------------------


def test_models_lists_the_served_model(client, server):
    models = client.models.list()
    assert [model.id for model in models.data] == [server.model] == ["chat"]


def test_greedy_completion_is_the_engines_greedy_text(client, artifact, tokenizer):
    prompt = "The quick brown fox"
    completion = client.completions.create(model="chat", prompt=prompt, max_tokens=12,
                                           temperature=0, extra_body={"ignore_eos": True})
    choice = completion.choices[0]
    ids = tokenizer.encode(prompt)
    with Model(artifact, num_threads=1) as model, Engine(model) as engine:
        expected = engine.generate([ids], max_tokens=12, temperature=0)[0][0]
    assert choice.text == tokenizer.decode(expected)
    assert choice.finish_reason == "length"
    assert completion.usage.prompt_tokens == len(ids)
    assert completion.usage.completion_tokens == 12
    assert completion.usage.total_tokens == len(ids) + 12


def test_streamed_completion_adds_up_to_the_whole(client):
    options = dict(model="chat", prompt="Once upon a time", max_tokens=10, temperature=0,
                   extra_body={"ignore_eos": True})
    whole = client.completions.create(**options).choices[0].text
    chunks = list(client.completions.create(stream=True,
                                            stream_options={"include_usage": True}, **options))
    assert "".join(c.choices[0].text for c in chunks if c.choices) == whole
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 10


def test_stream_ends_with_done(server):
    status, headers, payload = post(server, "/v1/completions", {
        "prompt": "Hello", "max_tokens": 4, "stream": True, "ignore_eos": True})
    assert status == 200 and headers["content-type"] == "text/event-stream"
    events = sse_events(payload)
    assert events[-1] == "[DONE]"
    assert json.loads(events[-2])["choices"][0]["finish_reason"] == "length"


def test_chat_renders_the_template(client, artifact, tokenizer):
    messages = [{"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Name a colour."}]
    reply = client.chat.completions.create(model="chat", messages=messages, max_tokens=6,
                                           temperature=0, extra_body={"ignore_eos": True})
    config = json.loads((artifact / "tokenizer_config.json").read_text())
    rendered = jinja2.Environment(trim_blocks=True, lstrip_blocks=True).from_string(
        config["chat_template"]).render(messages=messages, add_generation_prompt=True,
                                        bos_token=config["bos_token"],
                                        eos_token=config["eos_token"])
    assert rendered.endswith("<|im_start|>assistant\n")
    assert reply.usage.prompt_tokens == len(tokenizer.encode(rendered, add_special_tokens=False))
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].finish_reason == "length"
    assert reply.usage.completion_tokens == 6


def test_streamed_chat_sends_the_role_then_the_content(client):
    options = dict(model="chat", messages=[{"role": "user", "content": "Hi"}], max_tokens=8,
                   temperature=0, extra_body={"ignore_eos": True})
    whole = client.chat.completions.create(**options).choices[0].message.content
    chunks = list(client.chat.completions.create(stream=True, **options))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == whole
    assert chunks[-1].choices[0].finish_reason == "length"


def test_n_samples_stream_and_return_every_choice(client):
    options = dict(model="chat", prompt="A list:", max_tokens=6, temperature=0.9, seed=5, n=3,
                   extra_body={"ignore_eos": True})
    whole = client.completions.create(**options)
    assert sorted(choice.index for choice in whole.choices) == [0, 1, 2]
    assert whole.usage.completion_tokens == 18
    texts = {0: "", 1: "", 2: ""}
    for chunk in client.completions.create(stream=True, **options):
        for choice in chunk.choices:
            texts[choice.index] += choice.text
    assert [texts[i] for i in range(3)] == [choice.text for choice in whole.choices]


def test_a_seed_reproduces_its_text(client):
    options = dict(model="chat", prompt="Random words:", max_tokens=16, temperature=1.0,
                   extra_body={"ignore_eos": True})
    first = client.completions.create(seed=1234, **options).choices[0].text
    again = client.completions.create(seed=1234, **options).choices[0].text
    other = client.completions.create(seed=4321, **options).choices[0].text
    assert first == again
    assert first != other


@pytest.mark.parametrize("stream", [False, True])
def test_stop_strings_end_the_text_before_them(client, stream):
    options = dict(model="chat", prompt="The", max_tokens=24, temperature=0,
                   extra_body={"ignore_eos": True})
    whole = client.completions.create(**options).choices[0].text
    stop = whole[len(whole) // 2:len(whole) // 2 + 3]
    assert len(stop) == 3
    expected = whole[:whole.index(stop)]
    if stream:
        chunks = list(client.completions.create(stop=[stop, "\x00never"], stream=True, **options))
        text = "".join(c.choices[0].text for c in chunks)
        finish = chunks[-1].choices[0]
    else:
        finish = client.completions.create(stop=[stop, "\x00never"], **options).choices[0]
        text = finish.text
    assert text == expected
    assert finish.finish_reason == "stop"
    assert finish.model_extra["stop_reason"] == stop


def test_logprobs(client):
    completion = client.completions.create(model="chat", prompt="Hello", max_tokens=5,
                                           temperature=0, logprobs=3,
                                           extra_body={"ignore_eos": True})
    logprobs = completion.choices[0].logprobs
    assert len(logprobs.tokens) == len(logprobs.token_logprobs) == 5
    for chosen, top in zip(logprobs.token_logprobs, logprobs.top_logprobs):
        assert chosen <= 0 and len(top) <= 3 and max(top.values()) == pytest.approx(chosen)
    reply = client.chat.completions.create(model="chat", messages=[{"role": "user",
                                                                    "content": "Hi"}],
                                           max_tokens=3, temperature=0, logprobs=True,
                                           top_logprobs=2, extra_body={"ignore_eos": True})
    content = reply.choices[0].logprobs.content
    assert len(content) == 3 and all(len(entry.top_logprobs) == 2 for entry in content)


def engine_prompt_logprobs(artifact, ids: list[int], count: int) -> list[dict]:
    """The engine's own prompt logprobs (llmc.engine on the same artifact): per prompt token
    from the second, {token, logprob, rank, top_logprobs}."""
    with Model(artifact, num_threads=1) as model, Engine(model) as engine:
        engine.add_request(0, ids, max_tokens=1, temperature=0, prompt_logprobs=count)
        entries = []
        while engine.has_unfinished():
            for output in engine.step():
                entries += output["prompt_logprobs"]
    return entries


def token_text(tokenizer, token: int) -> str:
    return tokenizer.decode([token], skip_special_tokens=False)


def test_echo_gives_the_prompt_and_its_tokens_logprobs(client, artifact, tokenizer):
    prompt = "The quick brown fox jumps over"
    ids = tokenizer.encode(prompt)
    options = dict(model="chat", max_tokens=3, temperature=0, logprobs=2,
                   extra_body={"ignore_eos": True})
    plain = client.completions.create(prompt=prompt, **options).choices[0]
    echoed = client.completions.create(prompt=prompt, echo=True, **options).choices[0]
    assert echoed.text == prompt + plain.text
    logprobs = echoed.logprobs
    assert logprobs.tokens == [token_text(tokenizer, t) for t in ids] + plain.logprobs.tokens
    assert logprobs.token_logprobs[0] is None and logprobs.top_logprobs[0] is None
    assert logprobs.text_offset[:2] == [0, len(token_text(tokenizer, ids[0]))]
    assert logprobs.token_logprobs[len(ids):] == pytest.approx(plain.logprobs.token_logprobs,
                                                               abs=1e-5)
    reference = engine_prompt_logprobs(artifact, ids, 2)
    assert len(reference) == len(ids) - 1
    for position, entry in enumerate(reference, start=1):
        assert logprobs.token_logprobs[position] == pytest.approx(entry["logprob"], abs=1e-6)
        top = logprobs.top_logprobs[position]
        assert max(top.values()) == pytest.approx(entry["top_logprobs"][0][1], abs=1e-6)
        assert token_text(tokenizer, entry["top_logprobs"][0][0]) in top

    # Streamed, the echo comes first and the pieces add up to the same text.
    stream = client.completions.create(prompt=prompt, echo=True, stream=True, **options)
    pieces = [chunk.choices[0].text for chunk in stream if chunk.choices]
    assert pieces[0].startswith(prompt) and "".join(pieces) == echoed.text


def test_an_echo_of_its_own_output_scores_it_as_lm_eval_reads_it(client, artifact, tokenizer):
    """lm-eval-harness's loglikelihood: echo, max_tokens 0, logprobs 1. The continuation's
    logprobs are those the model gave it when it generated it, each token the top one."""
    ids = tokenizer.encode("Once upon a time there")
    with Model(artifact, num_threads=1) as model, Engine(model) as engine:
        generated = engine.generate([ids], max_tokens=4, temperature=0, logprobs=0)[0][0]
    plain = client.completions.create(model="chat", prompt=ids, max_tokens=4, temperature=0,
                                      logprobs=1, extra_body={"ignore_eos": True})
    scored = client.completions.create(model="chat", prompt=ids + generated, max_tokens=0,
                                       echo=True, logprobs=1, temperature=0)
    choice = scored.choices[0]
    assert choice.text == tokenizer.decode(ids + generated, skip_special_tokens=False)
    assert choice.finish_reason == "length" and scored.usage.completion_tokens == 0
    continuation = choice.logprobs.token_logprobs[len(ids):]
    assert continuation == pytest.approx(plain.choices[0].logprobs.token_logprobs, abs=1e-5)
    for token, top in zip(generated, choice.logprobs.top_logprobs[len(ids):]):
        assert max(top, key=top.get) == token_text(tokenizer, token)


def test_prompt_logprobs_in_vllms_format(client, artifact, tokenizer):
    ids = tokenizer.encode("Hello there, how are you")
    reference = engine_prompt_logprobs(artifact, ids, 2)
    completion = client.completions.create(model="chat", prompt=ids, max_tokens=2, n=2,
                                           temperature=0, extra_body={"prompt_logprobs": 2})
    for choice in completion.choices:
        positions = choice.model_extra["prompt_logprobs"]
        assert positions[0] is None and len(positions) == len(ids)
        for token, position, entry in zip(ids[1:], positions[1:], reference):
            first = next(iter(position))
            assert first == str(token)  # the prompt's token, then its alternatives
            assert position[first]["logprob"] == pytest.approx(entry["logprob"], abs=1e-6)
            assert position[first]["rank"] == entry["rank"]
            assert position[first]["decoded_token"] == token_text(tokenizer, token)
            for rank, (top_token, top_logprob) in enumerate(entry["top_logprobs"], start=1):
                assert position[str(top_token)]["logprob"] == pytest.approx(top_logprob, abs=1e-6)
                if top_token != token:
                    assert position[str(top_token)]["rank"] == rank
    reply = client.chat.completions.create(model="chat", messages=[{"role": "user",
                                                                    "content": "Hi"}],
                                           max_tokens=1, extra_body={"prompt_logprobs": 0})
    positions = reply.model_extra["prompt_logprobs"]
    assert positions[0] is None and len(positions) == reply.usage.prompt_tokens
    assert all(len(position) == 1 for position in positions[1:])


def test_logprobs_name_tokens_by_id_when_asked(server, client, artifact, tokenizer):
    """vLLM's return_tokens_as_token_ids: "token_id:N" instead of each token's text (a
    request's field, or the server's --return-tokens-as-token-ids as its default)."""
    ids = tokenizer.encode("Tokens by id")
    options = dict(model="chat", prompt=ids, max_tokens=3, temperature=0, logprobs=2, echo=True,
                   extra_body={"ignore_eos": True, "return_tokens_as_token_ids": True})
    by_id = client.completions.create(**options).choices[0]
    with Model(artifact, num_threads=1) as model, Engine(model) as engine:
        generated = engine.generate([ids], max_tokens=3, temperature=0)[0][0]
    assert by_id.logprobs.tokens == [f"token_id:{t}" for t in ids + generated]
    assert all(key.startswith("token_id:") for top in by_id.logprobs.top_logprobs[1:]
               for key in top)
    reply = client.chat.completions.create(
        model="chat", messages=[{"role": "user", "content": "Hi"}], max_tokens=2,
        temperature=0, logprobs=True, top_logprobs=1,
        extra_body={"return_tokens_as_token_ids": True})
    for entry in reply.choices[0].logprobs.content:
        assert entry.token.startswith("token_id:") and entry.bytes == list(entry.token.encode())
        assert entry.top_logprobs[0].token.startswith("token_id:")
    with Server(LLMC, artifact, "--return-tokens-as-token-ids", "--threads", "1") as flagged:
        other = openai.OpenAI(base_url=flagged.base_url, api_key="unused", max_retries=0)
        default = dict(model="chat", prompt=ids, max_tokens=2, temperature=0, logprobs=0)
        tokens = other.completions.create(
            **default, extra_body={"ignore_eos": True}).choices[0].logprobs.tokens
        assert tokens == [f"token_id:{t}" for t in generated[:2]]
        texts = other.completions.create(**default, extra_body={
            "ignore_eos": True, "return_tokens_as_token_ids": False}).choices[0].logprobs.tokens
        assert texts == [token_text(tokenizer, t) for t in generated[:2]]


def test_continuous_usage_stats_count_each_choices_tokens(client):
    stream = client.completions.create(
        model="chat", prompt="Count these tokens", max_tokens=5, n=2, temperature=0.8, seed=3,
        stream=True, stream_options={"include_usage": True, "continuous_usage_stats": True},
        extra_body={"ignore_eos": True})
    chunks = list(stream)
    final = chunks[-1].usage
    assert not chunks[-1].choices and final.completion_tokens == 10
    counts = {0: [], 1: []}
    for chunk in chunks[:-1]:
        usage = chunk.usage
        assert usage.prompt_tokens == final.prompt_tokens
        assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
        counts[chunk.choices[0].index].append(usage.completion_tokens)
    for index, seen in counts.items():
        assert seen == sorted(seen) and seen[-1] == 5, (index, seen)


def test_logit_bias_bans_and_forces_tokens(client, artifact, tokenizer):
    prompt = "The quick brown fox"
    ids = tokenizer.encode(prompt)
    with Model(artifact, num_threads=1) as model, Engine(model) as engine:
        greedy = engine.generate([ids], max_tokens=3, temperature=0)[0][0]
        banned = engine.generate([ids], max_tokens=3, temperature=0,
                                 logit_bias={str(greedy[0]): -100})[0][0]
    options = dict(model="chat", prompt=prompt, max_tokens=3, temperature=0,
                   extra_body={"ignore_eos": True})
    # The openai client sends the keys as strings, as OpenAI's API has them.
    text = client.completions.create(**options, logit_bias={str(greedy[0]): -100}).choices[0].text
    assert banned[0] != greedy[0]
    assert text == tokenizer.decode(banned)
    forced = tokenizer.encode(" fox")[-1]
    text = client.completions.create(**options, logit_bias={str(forced): 100}).choices[0].text
    assert text == tokenizer.decode([forced] * 3)


def test_min_tokens_holds_back_the_stop_tokens(client, artifact, tokenizer):
    ids = tokenizer.encode("Once upon a time")
    with Model(artifact, num_threads=1) as model, Engine(model) as engine:
        greedy = engine.generate([ids], max_tokens=1, temperature=0)[0][0]
    options = dict(model="chat", prompt=ids, max_tokens=8, temperature=0)
    stopping = {"stop_token_ids": [greedy[0]], "ignore_eos": True}
    early = client.completions.create(**options, extra_body=stopping)
    assert early.usage.completion_tokens == 1 and early.choices[0].finish_reason == "stop"
    late = client.completions.create(**options, extra_body={**stopping, "min_tokens": 5})
    assert late.usage.completion_tokens >= 5


def test_tokenize_and_detokenize_are_the_tokenizers(server, artifact):
    reference = tokenizers.Tokenizer.from_file(str(artifact / "tokenizer.json"))
    text = "The quick brown fox jumps over the lazy dog."
    status, _, payload = post(server, "/tokenize", {"prompt": text, "return_token_strs": True},
                              key=None)  # outside /v1: no API key, as vLLM
    assert status == 200, payload
    result = json.loads(payload)
    encoding = reference.encode(text)
    assert result["tokens"] == encoding.ids
    assert result["token_strs"] == encoding.tokens
    assert result["count"] == len(encoding.ids)
    models = raw_request(server, "GET", "/v1/models",
                         headers={"Authorization": f"Bearer {API_KEY}"})[2]
    assert result["max_model_len"] == json.loads(models)["data"][0]["max_model_len"]
    status, _, payload = post(server, "/tokenize", {"prompt": text, "add_special_tokens": False})
    assert json.loads(payload)["tokens"] == reference.encode(text, add_special_tokens=False).ids
    status, _, payload = post(server, "/detokenize", {"tokens": encoding.ids})
    assert status == 200, payload
    assert json.loads(payload)["prompt"] == reference.decode(encoding.ids,
                                                             skip_special_tokens=False)


def test_tokenize_renders_chat_messages(server, artifact):
    reference = tokenizers.Tokenizer.from_file(str(artifact / "tokenizer.json"))
    messages = [{"role": "user", "content": "Name a colour."}]
    config = json.loads((artifact / "tokenizer_config.json").read_text())
    template = jinja2.Environment(trim_blocks=True, lstrip_blocks=True).from_string(
        config["chat_template"])
    for generation_prompt in (True, False):
        rendered = template.render(messages=messages, add_generation_prompt=generation_prompt,
                                   bos_token=config["bos_token"], eos_token=config["eos_token"])
        status, _, payload = post(server, "/tokenize", {
            "messages": messages, "add_generation_prompt": generation_prompt})
        assert status == 200, payload
        assert json.loads(payload)["tokens"] == \
            reference.encode(rendered, add_special_tokens=False).ids


@pytest.mark.parametrize("path, body, param", [
    ("/tokenize", {}, "messages"),
    ("/tokenize", {"prompt": "x", "messages": [{"role": "user", "content": "x"}]}, "prompt"),
    ("/tokenize", {"prompt": 5}, "prompt"),
    ("/tokenize", {"prompt": "x", "model": "gpt-4"}, "model"),
    ("/detokenize", {"tokens": "abc"}, "tokens"),
    ("/detokenize", {"tokens": [1, -2]}, "tokens"),
    ("/detokenize", {"tokens": [10**9]}, "tokens"),
])
def test_bad_tokenizer_requests_get_errors(server, path, body, param):
    status, _, payload = post(server, path, body)
    assert status in (400, 404), payload
    assert json.loads(payload)["error"]["param"] == param
    assert raw_request(server, "GET", path)[0] == 405


def test_allowed_token_ids_and_the_stop_string_kept(client, tokenizer):
    allowed = tokenizer.encode(" red green blue", add_special_tokens=False)
    text = client.completions.create(
        model="chat", prompt="Colours:", max_tokens=6, temperature=1.0, seed=1,
        extra_body={"allowed_token_ids": allowed, "ignore_eos": True}).choices[0].text
    assert set(tokenizer.encode(text, add_special_tokens=False)) <= set(allowed)
    options = dict(model="chat", prompt="The quick brown fox", max_tokens=24, temperature=0)
    whole = client.completions.create(**options, extra_body={"ignore_eos": True}).choices[0].text
    stop = whole[8:12]
    assert whole.find(stop) == 8
    kept = client.completions.create(**options, stop=stop, extra_body={
        "ignore_eos": True, "include_stop_str_in_output": True}).choices[0]
    assert kept.text == whole[:12] and kept.finish_reason == "stop"


def test_special_tokens_text_only_when_asked(client, artifact, tokenizer):
    config = json.loads((artifact / "tokenizer_config.json").read_text())
    eos = tokenizer.encode(config["eos_token"], add_special_tokens=False)
    assert len(eos) == 1
    # A bias forces the special end-of-sequence token three times.
    options = dict(model="chat", prompt="Hi", max_tokens=3, temperature=0,
                   logit_bias={str(eos[0]): 100})
    skipped = client.completions.create(**options, extra_body={"ignore_eos": True})
    assert skipped.choices[0].text == "" and skipped.usage.completion_tokens == 3
    kept = client.completions.create(**options, extra_body={"ignore_eos": True,
                                                            "skip_special_tokens": False})
    assert kept.choices[0].text == config["eos_token"] * 3


def test_token_id_prompts_and_a_batch_of_prompts(client, tokenizer):
    ids = tokenizer.encode("Hello there")
    by_ids = client.completions.create(model="chat", prompt=ids, max_tokens=5, temperature=0,
                                       extra_body={"ignore_eos": True})
    batch = client.completions.create(model="chat", prompt=["Hello there", "Goodbye"],
                                      max_tokens=5, temperature=0,
                                      extra_body={"ignore_eos": True})
    assert [choice.index for choice in batch.choices] == [0, 1]
    assert batch.choices[0].text == by_ids.choices[0].text
    assert batch.usage.prompt_tokens == len(ids) + len(tokenizer.encode("Goodbye"))


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize("body, status, param", [
    (b"{not json", 400, None),
    (b"[1, 2]", 400, None),
    ({"prompt": "x", "max_tokens": "ten"}, 400, "max_tokens"),
    ({"prompt": "x", "max_tokens": -1}, 400, "max_tokens"),
    ({"prompt": "x", "max_tokens": 10**12}, 400, "max_tokens"),
    ({"prompt": "x", "temperature": 9}, 400, "temperature"),
    ({"prompt": "x", "n": 0}, 400, "n"),
    ({"prompt": "x", "stop": 7}, 400, "stop"),
    ({"prompt": 5}, 400, "prompt"),
    ({}, 400, "prompt"),
    ({"prompt": [1, -2]}, 400, "prompt"),
    ({"prompt": "x", "stream_options": {"include_usage": True}}, 400, "stream_options"),
    ({"prompt": "x", "echo": "yes"}, 400, "echo"),
    ({"prompt": "x", "max_tokens": 0}, 400, "max_tokens"),
    ({"prompt": "x", "prompt_logprobs": 21}, 400, "prompt_logprobs"),
    ({"prompt": "x", "prompt_logprobs": 1, "stream": True}, 400, "prompt_logprobs"),
    ({"prompt": "x", "priority": "high"}, 400, "priority"),
    # This server serves first come, first served: a priority is refused, by the engine.
    ({"prompt": "x", "priority": 1}, 400, None),
    ({"prompt": "x", "logit_bias": {"x": 1}}, 400, "logit_bias"),
    ({"prompt": "x", "logit_bias": {"5": 101}}, 400, "logit_bias"),
    ({"prompt": "x", "logit_bias": [5]}, 400, "logit_bias"),
    ({"prompt": "x", "min_tokens": -1}, 400, "min_tokens"),
    ({"prompt": "x", "allowed_token_ids": []}, 400, "allowed_token_ids"),
    ({"prompt": "x", "truncate_prompt_tokens": 0}, 400, "truncate_prompt_tokens"),
    ({"prompt": "x", "truncate_prompt_tokens": -2}, 400, "truncate_prompt_tokens"),
    ({"prompt": "x", "model": "gpt-4"}, 404, "model"),
])
def test_bad_completion_requests_get_errors(server, client, body, status, param):
    got, headers, payload = post(server, "/v1/completions", body)
    assert got == status, payload
    assert headers["content-type"] == "application/json"
    error = json.loads(payload)["error"]
    assert error["message"] and error["type"] and error["param"] == param
    # ... and the server goes on serving.
    assert client.completions.create(model="chat", prompt="ok", max_tokens=1).choices


def test_bad_chat_requests_get_errors(server):
    for body in ({"messages": []}, {"messages": [{"content": "no role"}]},
                 {"messages": "hi"}, {"messages": [{"role": "user", "content": 3}]}):
        status, _, payload = post(server, "/v1/chat/completions", body)
        assert status == 400, (body, payload)
        assert json.loads(payload)["error"]["param"] == "messages"


@pytest.mark.parametrize("stream", [False, True])
def test_a_prompt_over_max_model_len_is_400(server, client, stream):
    max_model_len = client.models.list().data[0].model_extra["max_model_len"]
    status, _, payload = post(server, "/v1/completions", {
        "prompt": [1] * max_model_len, "max_tokens": 1, "stream": stream})
    assert status == 400, payload
    assert "max_model_len" in json.loads(payload)["error"]["message"]


def test_truncate_prompt_tokens_keeps_the_prompts_end(server, client, tokenizer):
    max_model_len = client.models.list().data[0].model_extra["max_model_len"]
    long = list(range(3, 3 + max_model_len + 40))
    options = dict(model="chat", max_tokens=4, temperature=0, extra_body={"ignore_eos": True})
    kept = client.completions.create(prompt=long[-16:], **options)
    truncated = client.completions.create(prompt=long, **options | {"extra_body": {
        "ignore_eos": True, "truncate_prompt_tokens": 16}})
    assert truncated.usage.prompt_tokens == 16
    assert truncated.choices[0].text == kept.choices[0].text
    text = "The quick brown fox " * 40
    tail = tokenizer.encode(text)[-10:]
    status, _, payload = post(server, "/v1/completions", {
        "prompt": text, "max_tokens": 1, "truncate_prompt_tokens": 10})
    assert status == 200, payload
    assert json.loads(payload)["usage"]["prompt_tokens"] == len(tail)


def test_the_api_key_is_required(server):
    for key, expected in ((None, 401), ("wrong", 401), (API_KEY, 200)):
        status, _, payload = post(server, "/v1/completions", {"prompt": "x", "max_tokens": 1},
                                  key=key)
        assert status == expected, payload
    # Health and metrics are open (probes and scrapers carry no key).
    assert raw_request(server, "GET", "/health")[0] == 200
    assert raw_request(server, "GET", "/metrics")[0] == 200
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=server.base_url, api_key="wrong", max_retries=0).models.list()


def test_unknown_paths_and_methods(server):
    assert raw_request(server, "GET", "/v1/nothing",
                       headers={"Authorization": f"Bearer {API_KEY}"})[0] == 404
    assert raw_request(server, "GET", "/v1/completions",
                       headers={"Authorization": f"Bearer {API_KEY}"})[0] == 405


def test_a_body_over_the_limit_is_413(server, client):
    status, _, payload = post(server, "/v1/completions",
                              json.dumps({"prompt": "x" * (2 << 20)}).encode())
    assert status == 413
    assert json.loads(payload)["error"]["type"] == "invalid_request_error"
    assert client.completions.create(model="chat", prompt="ok", max_tokens=1).choices


def test_a_full_queue_is_429_with_retry_after(artifact):
    with Server(LLMC, artifact, "--max-pending-requests", "1", "--threads", "1") as server:
        # A request's prompts are taken all or none.
        status, _, payload = post(server, "/v1/completions", {"prompt": ["x", "y"]})
        assert status == 429, payload
        assert "takes at most 1, not 2 more" in json.loads(payload)["error"]["message"]
        hold = threading.Thread(target=post, args=(server, "/v1/completions", {
            "prompt": "x", "max_tokens": 2000, "ignore_eos": True}))
        hold.start()
        while server.metrics()["llmc_num_requests_pending"] < 1:
            time.sleep(0.01)
        status, headers, payload = post(server, "/v1/completions", {"prompt": "y"})
        assert status == 429, payload
        assert headers["retry-after"] == "1"
        assert json.loads(payload)["error"]["type"] == "rate_limit_error"
        with pytest.raises(openai.RateLimitError):
            openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0) \
                .completions.create(model=server.model, prompt="z")
        hold.join()


def test_preempted_requests_swap_and_keep_their_text(artifact, tokenizer):
    """A KV cache of 8 blocks under 6 concurrent requests preempts; with --swap-space the
    preempted requests' blocks go to host memory and back, /metrics counts the swaps, and
    every text is the engine's greedy text."""
    prompts = [f"request {i}: the quick brown fox jumps over" for i in range(6)]
    with Model(artifact, num_threads=1) as model, Engine(model) as engine:
        expected = [tokenizer.decode(engine.generate([tokenizer.encode(p)], first_id=i,
                                                     max_tokens=40, temperature=0)[0][0])
                    for i, p in enumerate(prompts)]
    with Server(LLMC, artifact, "--kv-blocks", "8", "--swap-space", "64MiB",
                "--threads", "1") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        with ThreadPoolExecutor(len(prompts)) as pool:
            texts = list(pool.map(lambda p: client.completions.create(
                model=server.model, prompt=p, max_tokens=40, temperature=0,
                extra_body={"ignore_eos": True}).choices[0].text, prompts))
        metrics = server.metrics()
    assert texts == expected
    assert metrics['llmc_preemptions_total{mode="swap"}'] > 0, metrics
    assert metrics["llmc_num_preemptions_total"] == (metrics['llmc_preemptions_total{mode="swap"}']
                                                     + metrics['llmc_preemptions_total{mode="recompute"}'])
    assert metrics["llmc_swap_blocks_used"] == 0
    assert metrics["llmc_swap_blocks_total"] > 0


# --- disconnects and shutdown ---------------------------------------------------------------


def test_a_client_gone_mid_stream_frees_its_blocks_at_once(server):
    host, port = server.url.removeprefix("http://").split(":")
    body = json.dumps({"prompt": "Tell me everything", "max_tokens": 4000, "stream": True,
                       "ignore_eos": True}).encode()
    aborted_before = server.metrics().get('llmc_requests_finished_total{finish_reason="abort"}', 0)
    connection = socket.create_connection((host, int(port)))
    connection.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                       b"Authorization: Bearer " + API_KEY.encode() + b"\r\n"
                       b"Content-Type: application/json\r\nContent-Length: "
                       + str(len(body)).encode() + b"\r\n\r\n" + body)
    received = b""
    while received.count(b"data: ") < 3:
        received += connection.recv(4096)
    assert server.metrics()["llmc_kv_cache_blocks_used"] > 0
    connection.close()
    start = time.monotonic()
    server.wait_for_idle(timeout=10)
    assert time.monotonic() - start < 2
    # The connection's coroutine counts the request's end once it has read the
    # abort events, a moment after the engine freed the blocks.
    abort = 'llmc_requests_finished_total{finish_reason="abort"}'
    deadline = time.monotonic() + 10
    while server.metrics().get(abort, 0) != aborted_before + 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.metrics().get(abort, 0) == aborted_before + 1


def test_metrics_are_prometheus_text(server, client):
    client.completions.create(model="chat", prompt="count me", max_tokens=3)
    text = server.get("/metrics")
    for name in ("llmc_num_requests_running", "llmc_num_requests_waiting",
                 "llmc_kv_cache_blocks_used", "llmc_prefix_cache_hit_rate",
                 "llmc_generation_tokens_per_second", "llmc_time_to_first_token_seconds",
                 "llmc_inter_token_latency_seconds"):
        assert f"# TYPE {name} " in text
    metrics = server.metrics()
    assert metrics["llmc_generation_tokens_total"] >= 3
    assert metrics['llmc_time_to_first_token_seconds_bucket{le="+Inf"}'] \
        == metrics["llmc_time_to_first_token_seconds_count"] >= 1


def test_sigterm_finishes_requests_in_flight_then_exits_0(artifact):
    server = Server(LLMC, artifact, "--threads", "1").__enter__()
    result = {}

    def stream():
        result["response"] = post(server, "/v1/completions", {
            "prompt": "x", "max_tokens": 200, "stream": True, "ignore_eos": True})

    thread = threading.Thread(target=stream)
    thread.start()
    while server.metrics()["llmc_generation_tokens_total"] < 1:
        time.sleep(0.01)
    assert server.stop() == 0
    thread.join()
    status, _, payload = result["response"]
    events = sse_events(payload)
    assert status == 200 and events[-1] == "[DONE]"
    assert json.loads(events[-2])["choices"][0]["finish_reason"] == "length"
    assert sum(1 for event in events[:-1] if json.loads(event)["choices"][0]["text"]) > 0
    host, port = server.url.removeprefix("http://").split(":")
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=1)


def test_bench_serve_against_the_server(server):
    result = subprocess.run([str(LLMC), "bench", "serve", "--url", server.url, "--api-key", API_KEY,
                             "--num-prompts", "6", "--input-len-range", "4:24",
                             "--output-len-range", "4:12", "--request-rate", "20", "--json"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["model"] == "chat"
    assert report["num_requests"] == 6 and report["failed_requests"] == 0
    assert report["ttft_ms"]["p50"] > 0
