"""llmc's Python API (vLLM's: LLM, SamplingParams, AsyncLLM) on the default model.

Checked against outside references on the same artifact: greedy text equals `llmc run`'s,
and chat equals `llmc serve`'s /v1/chat/completions through the openai client. Also: the
ONNX model is compiled once and then taken from the cache; token-id and dict prompts; n=4
sampling reproducible by seed; stop strings and stop tokens; logprobs; structured outputs
(JSON schema, JSON, regex, choice, grammar) validated; a 64-prompt batch in one call whose
outputs do not depend on the batch; speculative decoding (speculative_config, and `llmc
serve --speculative-config` streaming) giving the greedy text of decoding without it; AsyncLLM streaming and aborting; every bad parameter
raises ValueError and the LLM goes on working.

scripts/test-wheel.sh runs this file again against the package `pip install .` put in a
fresh venv (LLMC_TEST_INSTALLED=1 checks that the installed package is the one imported).
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import openai
import pytest

import llmc
import llmc.model_cache
from llmc import LLM, AsyncLLM, LlmcRequestError, SamplingParams, StructuredOutputsParams
from llmc.compiler import find_llmc
from llmc.model_cache import resolve_model
from llmc.testing.server import Server, default_model_dir

ROOT = Path(__file__).resolve().parents[2]
PROMPTS = ["The capital of France is", "Hello, my name is", "def fibonacci(n):"]
GREEDY = SamplingParams(temperature=0, max_tokens=24)
MESSAGES = [{"role": "user", "content": "What is the tallest mountain on Earth?"}]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("llmc-cache")
    saved = os.environ.get("LLMC_CACHE_DIR")
    os.environ["LLMC_CACHE_DIR"] = str(directory)
    yield directory
    if saved is None:
        del os.environ["LLMC_CACHE_DIR"]
    else:
        os.environ["LLMC_CACHE_DIR"] = saved


@pytest.fixture(scope="module")
def model_dir() -> Path:
    """The checkout's models/smollm2-135m (llmc.testing converts it on first use; the
    installed package, whose llmc.testing lives outside the checkout, needs it made)."""
    directory = ROOT / "models" / "smollm2-135m"
    return directory if (directory / "model.onnx").is_file() else default_model_dir()


@pytest.fixture(scope="module")
def llm(cache_dir, model_dir):
    with LLM(model_dir / "model.onnx", num_threads=2, kv_cache_memory="512MiB",
             quiet=True) as llm:
        yield llm


def texts(outputs) -> list[str]:
    return [output.outputs[0].text for output in outputs]


@pytest.mark.skipif(os.environ.get("LLMC_TEST_INSTALLED") != "1",
                    reason="only for the installed package (scripts/test-wheel.sh)")
def test_the_installed_package_and_command_are_the_ones_used():
    assert "site-packages" in llmc.__file__
    assert find_llmc() == Path(sys.executable).parent / "llmc"


def test_an_onnx_model_compiles_once_then_comes_from_the_cache(llm, cache_dir, model_dir,
                                                              monkeypatch):
    assert llm.artifact.parent == cache_dir / "compiled"
    assert (llm.artifact / "manifest.json").is_file()

    def no_compile(*args, **kwargs):
        raise AssertionError("compiled again")

    monkeypatch.setattr(llmc.model_cache, "compile_model", no_compile)
    assert resolve_model(model_dir / "model.onnx", quiet=True) == llm.artifact
    assert resolve_model(model_dir, quiet=True) == llm.artifact
    assert resolve_model(llm.artifact) == llm.artifact


def test_greedy_text_equals_llmc_run(llm):
    command = [str(find_llmc()), "run", str(llm.artifact), "--max-tokens", "24", "--json",
               "--threads", "2"]
    for prompt in PROMPTS:
        command += ["--prompt", prompt]
    run = json.loads(subprocess.run(command, capture_output=True, text=True,
                                    check=True).stdout)["outputs"]
    outputs = llm.generate(PROMPTS, GREEDY, use_tqdm=False)
    assert [o.prompt for o in outputs] == PROMPTS
    assert [o.prompt_token_ids for o in outputs] == [r["prompt_ids"] for r in run]
    assert [o.outputs[0].token_ids for o in outputs] == [r["output_ids"] for r in run]
    assert texts(outputs) == [r["text"] for r in run]
    assert all(o.finished and o.outputs[0].finish_reason == "length" for o in outputs)
    assert len({o.request_id for o in outputs}) == len(PROMPTS)


def test_token_id_and_dict_prompts(llm):
    by_text = llm.generate(PROMPTS[0], GREEDY, use_tqdm=False)[0]
    ids = by_text.prompt_token_ids
    for prompt in (ids, [ids], {"prompt_token_ids": ids}, {"prompt": PROMPTS[0]}):
        (output,) = llm.generate(prompt, GREEDY, use_tqdm=False)
        assert output.outputs[0].token_ids == by_text.outputs[0].token_ids
        assert output.outputs[0].text == by_text.outputs[0].text
    assert llm.generate(ids, GREEDY, use_tqdm=False)[0].prompt is None
    assert llm.generate([], GREEDY) == []


def test_n4_sampling_is_reproducible_by_seed(llm):
    params = SamplingParams(n=4, temperature=0.8, top_p=0.95, seed=7, max_tokens=16)
    first, again = (llm.generate(PROMPTS[1], params, use_tqdm=False)[0] for _ in range(2))
    other = llm.generate(PROMPTS[1], SamplingParams(n=4, temperature=0.8, top_p=0.95,
                                                    seed=8, max_tokens=16),
                         use_tqdm=False)[0]
    samples = [s.token_ids for s in first.outputs]
    assert [s.index for s in first.outputs] == [0, 1, 2, 3]
    assert samples == [s.token_ids for s in again.outputs]
    assert [s.text for s in first.outputs] == [s.text for s in again.outputs]
    assert len({tuple(s) for s in samples}) > 1
    assert samples != [s.token_ids for s in other.outputs]


def test_stop_strings_end_the_text_before_them(llm):
    whole = llm.generate(PROMPTS[0], GREEDY, use_tqdm=False)[0].outputs[0].text
    stop = whole[8:12]
    assert stop.strip() and whole.find(stop) == 8
    (output,) = llm.generate(PROMPTS[0], SamplingParams(temperature=0, max_tokens=24,
                                                        stop=[stop, "never appears"]),
                             use_tqdm=False)
    sample = output.outputs[0]
    assert sample.text == whole[:8]
    assert (sample.finish_reason, sample.stop_reason) == ("stop", stop)
    (kept,) = llm.generate(PROMPTS[0], SamplingParams(temperature=0, max_tokens=24, stop=stop,
                                                      include_stop_str_in_output=True),
                           use_tqdm=False)
    assert kept.outputs[0].text == whole[:12]


def test_stop_token_ids_end_the_sample_with_the_token(llm):
    tokens = llm.generate(PROMPTS[0], GREEDY, use_tqdm=False)[0].outputs[0].token_ids
    stop = tokens[5]
    first = tokens.index(stop)
    (output,) = llm.generate(PROMPTS[0], SamplingParams(temperature=0, max_tokens=24,
                                                        stop_token_ids=[stop]),
                             use_tqdm=False)
    sample = output.outputs[0]
    assert sample.token_ids == tokens[:first + 1]
    assert (sample.finish_reason, sample.stop_reason) == ("stop", stop)


def test_min_tokens_defers_the_end_of_sequence_and_stop_strings(llm):
    (answer,) = llm.chat(MESSAGES, SamplingParams(temperature=0, max_tokens=200),
                         use_tqdm=False)
    ended = len(answer.outputs[0].token_ids)
    (longer,) = llm.chat(MESSAGES, SamplingParams(temperature=0, max_tokens=ended + 8,
                                                  min_tokens=ended + 4), use_tqdm=False)
    tokens = longer.outputs[0].token_ids
    assert len(tokens) >= ended + 4
    assert not set(tokens[:ended + 4]) & set(llm._engine.eos_token_ids)
    whole = llm.generate(PROMPTS[0], GREEDY, use_tqdm=False)[0].outputs[0]
    stop = whole.text[8:12]
    (output,) = llm.generate(PROMPTS[0], SamplingParams(temperature=0, max_tokens=24, stop=stop,
                                                        min_tokens=20), use_tqdm=False)
    # The stop string comes again only if the text repeats; it never cuts the first 20 tokens.
    assert output.outputs[0].text.startswith(whole.text[:12])


def test_logit_bias_changes_the_greedy_tokens(llm):
    tokens = llm.generate(PROMPTS[0], GREEDY, use_tqdm=False)[0].outputs[0].token_ids
    (banned,) = llm.generate(PROMPTS[0], SamplingParams(
        temperature=0, max_tokens=4, logit_bias={tokens[0]: -100}), use_tqdm=False)
    assert banned.outputs[0].token_ids[0] != tokens[0]
    (forced,) = llm.generate(PROMPTS[0], SamplingParams(
        temperature=0, max_tokens=4, logit_bias={tokens[3]: 100}), use_tqdm=False)
    assert forced.outputs[0].token_ids == [tokens[3]] * 4


def test_allowed_token_ids_are_the_only_ones_sampled(llm):
    allowed = [5, 17, 300]
    (output,) = llm.generate(PROMPTS[0], SamplingParams(
        n=3, temperature=1.0, seed=3, max_tokens=12, allowed_token_ids=allowed), use_tqdm=False)
    for sample in output.outputs:
        assert len(sample.token_ids) == 12 and set(sample.token_ids) <= set(allowed)


def test_special_tokens_text_only_when_asked(llm):
    eos = llm._engine.eos_token_ids[0]
    forced = dict(temperature=0, max_tokens=2, ignore_eos=True, logit_bias={eos: 100})
    (skipped,) = llm.generate(PROMPTS[0], SamplingParams(**forced), use_tqdm=False)
    assert skipped.outputs[0].token_ids == [eos, eos] and skipped.outputs[0].text == ""
    (kept,) = llm.generate(PROMPTS[0], SamplingParams(**forced, skip_special_tokens=False),
                           use_tqdm=False)
    assert kept.outputs[0].text == llm._decode_token(eos) * 2 != ""


def test_end_of_sequence_stops_unless_ignore_eos(llm):
    (answer,) = llm.chat(MESSAGES, SamplingParams(temperature=0, max_tokens=200),
                         use_tqdm=False)
    sample = answer.outputs[0]
    assert sample.finish_reason == "stop" and sample.stop_reason is None
    eos = sample.token_ids[-1]
    assert eos in llm._engine.eos_token_ids
    (longer,) = llm.chat(MESSAGES, SamplingParams(temperature=0, max_tokens=len(
        sample.token_ids) + 4, ignore_eos=True), use_tqdm=False)
    assert longer.outputs[0].token_ids[:len(sample.token_ids)] == sample.token_ids
    assert longer.outputs[0].finish_reason == "length"


def test_logprobs(llm):
    (output,) = llm.generate(PROMPTS[0], SamplingParams(temperature=0, max_tokens=8,
                                                        logprobs=3), use_tqdm=False)
    sample = output.outputs[0]
    assert len(sample.logprobs) == len(sample.token_ids) == 8
    total = 0.0
    for token, entries in zip(sample.token_ids, sample.logprobs):
        ranked = sorted((e.rank, e.logprob) for e in entries.values() if e.rank is not None)
        assert [rank for rank, _ in ranked] == [1, 2, 3]
        assert all(a >= b for (_, a), (_, b) in zip(ranked, ranked[1:]))
        assert entries[token].rank == 1  # greedy
        assert entries[token].decoded_token == llm.get_tokenizer().decode(
            [token], skip_special_tokens=False)
        total += entries[token].logprob
    assert sample.cumulative_logprob == pytest.approx(total, abs=1e-4)
    plain = llm.generate(PROMPTS[0], GREEDY, use_tqdm=False)[0].outputs[0]
    assert plain.logprobs is None and plain.cumulative_logprob is None
    assert output.prompt_logprobs is None


def test_priorities_need_the_priority_policy_and_keep_the_outputs(llm, model_dir):
    greedy = llm.generate(PROMPTS, GREEDY, use_tqdm=False)
    with pytest.raises(LlmcRequestError, match="needs the priority scheduling policy"):
        llm.generate(PROMPTS[0], GREEDY, use_tqdm=False, priority=[1])
    with pytest.raises(ValueError, match="one per prompt"):
        llm.generate(PROMPTS, GREEDY, use_tqdm=False, priority=[1])
    with LLM(model_dir / "model.onnx", num_threads=2, kv_cache_memory="256MiB", quiet=True,
             scheduling_policy="priority", max_num_seqs=1) as ordered:
        outputs = ordered.generate(PROMPTS, GREEDY, use_tqdm=False, priority=[2, 0, 1])
    assert texts(outputs) == texts(greedy)
    with pytest.raises(ValueError, match="scheduling_policy"):
        LLM(model_dir / "model.onnx", scheduling_policy="lifo")


def test_prompt_logprobs_are_onnxruntimes(llm, model_dir):
    """vLLM's RequestOutput.prompt_logprobs: None, then per prompt token {token id: Logprob}
    of it (its rank under the model) and the 2 most likely, as onnxruntime's log-softmax over
    the same file's logits gives them."""
    import numpy as np
    from llmc.testing.ort_reference import OrtDecoder

    (output,) = llm.generate(PROMPTS[1], SamplingParams(temperature=0, max_tokens=2,
                                                        prompt_logprobs=2), use_tqdm=False)
    ids = output.prompt_token_ids
    logits, _ = OrtDecoder(model_dir / "model.onnx").prefill([ids])
    rows = logits[0].astype(np.float64)
    reference = rows - rows.max(axis=-1, keepdims=True)
    reference -= np.log(np.exp(reference).sum(axis=-1, keepdims=True))
    assert output.prompt_logprobs[0] is None and len(output.prompt_logprobs) == len(ids)
    tokenizer = llm.get_tokenizer()
    for position, entries in enumerate(output.prompt_logprobs[1:]):
        token = ids[position + 1]
        row = reference[position]
        assert next(iter(entries)) == token
        assert entries[token].logprob == pytest.approx(row[token], abs=1e-4)
        assert entries[token].rank == 1 + int((row > row[token] + 1e-4).sum())
        assert entries[token].decoded_token == tokenizer.decode([token],
                                                                skip_special_tokens=False)
        by_rank = sorted(entries, key=lambda t: entries[t].rank)
        assert by_rank[:2] == list(np.argsort(-row, kind="stable")[:2])
    # The sampled tokens' logprobs are untouched; none asked, none given.
    assert output.outputs[0].logprobs is None


PERSON = {"type": "object", "additionalProperties": False, "required": ["name", "age", "tags"],
          "properties": {"name": {"type": "string", "maxLength": 24},
                         "age": {"type": "integer", "minimum": 0, "maximum": 120},
                         "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]},
                                  "maxItems": 3}}}


def test_structured_outputs_follow_their_constraint(llm):
    ask = [{"role": "user", "content": "Describe a person as JSON."}]

    def sample(constraint: StructuredOutputsParams, n: int = 1, seed: int = 1,
               messages: list[dict] = ask):
        params = SamplingParams(n=n, temperature=0.8, seed=seed, max_tokens=96,
                                structured_outputs=constraint)
        (output,) = llm.chat(messages, params, use_tqdm=False)
        assert all(s.finish_reason == "stop" for s in output.outputs), output.outputs
        return [s.text for s in output.outputs]

    for text in sample(StructuredOutputsParams(json=PERSON), n=3):
        jsonschema.validate(json.loads(text), PERSON)
    jsonschema.validate(json.loads(sample(StructuredOutputsParams(
        json=json.dumps(PERSON)))[0]), PERSON)
    # Any JSON document; this prompt and seed give one that ends within max_tokens.
    json.loads(sample(StructuredOutputsParams(json_object=True), seed=0, messages=[
        {"role": "user", "content": "Reply with a JSON object holding your name."}])[0])
    assert all(text in ("yes", "no", "maybe")
               for text in sample(StructuredOutputsParams(choice=["yes", "no", "maybe"]), n=3))
    assert re.fullmatch(r"[0-9]{3}-[0-9]{4}",
                        sample(StructuredOutputsParams(regex=r"[0-9]{3}-[0-9]{4}"))[0])
    assert sample(StructuredOutputsParams(grammar='root ::= "up" | "down"'))[0] in ("up", "down")


@pytest.mark.parametrize("arguments, message", [
    ({}, "exactly one"), ({"regex": "a", "choice": ["a"]}, "exactly one"),
    ({"choice": []}, "non-empty list"), ({"choice": [1]}, "choice"), ({"json": 3}, "json"),
])
def test_bad_structured_outputs_params_raise_value_error(arguments, message):
    with pytest.raises(ValueError, match=message):
        StructuredOutputsParams(**arguments)


@pytest.mark.parametrize("constraint, message", [
    (StructuredOutputsParams(json={"type": "object", "not": {"required": ["a"]}}), "'not'"),
    (StructuredOutputsParams(json="{not json"), "structured_outputs"),
    (StructuredOutputsParams(grammar="root ::= undefined_rule"), "structured_outputs"),
])
def test_constraints_the_engine_cannot_enforce_are_refused(llm, constraint, message):
    with pytest.raises(LlmcRequestError, match=message):
        llm.generate(PROMPTS[0], SamplingParams(structured_outputs=constraint), use_tqdm=False)
    assert texts(llm.generate(PROMPTS[:1], GREEDY, use_tqdm=False))[0]


def test_chat_equals_the_servers_chat_completions(llm):
    conversations = [MESSAGES, [{"role": "system", "content": "Answer in French."},
                                {"role": "user", "content": "Name a color."}]]
    ours = llm.chat(conversations, SamplingParams(temperature=0, max_tokens=32),
                    use_tqdm=False)
    with Server(find_llmc(), llm.artifact, "--threads", "1", "--kv-blocks", "256") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)
        for conversation, output in zip(conversations, ours):
            reply = client.chat.completions.create(model=server.model, messages=conversation,
                                                   temperature=0, max_tokens=32)
            assert output.outputs[0].text == reply.choices[0].message.content
            assert output.outputs[0].finish_reason == reply.choices[0].finish_reason
            assert len(output.prompt_token_ids) == reply.usage.prompt_tokens
    assert ours[0].prompt.startswith("<|im_start|>")
    assert llm.chat(MESSAGES, GREEDY, use_tqdm=False)[0].outputs[0].text == \
        texts(llm.chat([MESSAGES], GREEDY, use_tqdm=False))[0]


SPECULATIVE = {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 1}
# Text the model goes on to copy from its prompt: drafts by prompt lookup are accepted.
COPYING = ("Repeat the list exactly.\nList: apples, pears, plums, cherries, grapes, lemons, "
           "limes, figs, dates, kiwis.\nRepeated list: apples,")


def test_speculative_decoding_keeps_the_greedy_text(llm):
    params = SamplingParams(temperature=0, max_tokens=32)
    prompts = [COPYING] + PROMPTS
    expected = llm.generate(prompts, params, use_tqdm=False)
    with LLM(llm.artifact, num_threads=2, kv_cache_memory="256MiB", quiet=True,
             speculative_config=SPECULATIVE) as speculating:
        outputs = speculating.generate(prompts, params, use_tqdm=False)
        stats = speculating.stats()
    assert [o.outputs[0].token_ids for o in outputs] == \
        [o.outputs[0].token_ids for o in expected]
    assert stats["accepted_draft_tokens"] > 0, stats


def test_the_server_streams_speculated_tokens_in_order(llm):
    """A step can give a request several tokens: streamed, they make the greedy text."""
    expected = texts(llm.generate([COPYING], SamplingParams(temperature=0, max_tokens=32,
                                                            ignore_eos=True), use_tqdm=False))[0]
    with Server(find_llmc(), llm.artifact, "--threads", "1", "--kv-blocks", "256",
                "--speculative-config", json.dumps(SPECULATIVE)) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)
        chunks = client.completions.create(model=server.model, prompt=COPYING, max_tokens=32,
                                           temperature=0, stream=True,
                                           extra_body={"ignore_eos": True})
        streamed = "".join(chunk.choices[0].text for chunk in chunks if chunk.choices)
        metrics = server.metrics()
    assert streamed == expected
    assert metrics["llmc_spec_decode_accepted_tokens_total"] > 0, metrics


def test_a_64_prompt_batch_in_one_call(llm, capfd):
    prompts = [f"Item {i}: the {['red', 'green', 'blue', 'old'][i % 4]} {i * 7 % 13}" * (1 + i % 3)
               for i in range(64)]
    params = SamplingParams(temperature=0, max_tokens=8)
    outputs = llm.generate(prompts, params)
    assert "Processed prompts" in capfd.readouterr().err
    assert [o.prompt for o in outputs] == prompts
    assert all(len(o.outputs[0].token_ids) == 8 for o in outputs)
    for i in (0, 21, 42, 63):  # the batch does not change a greedy sequence
        alone = llm.generate(prompts[i], params, use_tqdm=False)[0]
        assert alone.outputs[0].token_ids == outputs[i].outputs[0].token_ids
    assert capfd.readouterr().err == ""
    several = llm.generate(prompts[:3], [SamplingParams(temperature=0, max_tokens=k)
                                         for k in (1, 2, 3)], use_tqdm=False)
    assert [len(o.outputs[0].token_ids) for o in several] == [1, 2, 3]


@pytest.mark.parametrize("arguments", [
    {"n": 0}, {"temperature": -0.5}, {"top_p": 0}, {"top_p": 1.5}, {"top_k": -2},
    {"min_p": 1.5}, {"max_tokens": 0}, {"presence_penalty": 2.5}, {"frequency_penalty": -3},
    {"repetition_penalty": 0}, {"logprobs": -1}, {"stop": [""]}, {"stop": [1]},
    {"stop_token_ids": [-1]}, {"seed": -1}, {"n": 1.5}, {"temperature": "hot"},
    {"logit_bias": {-1: 1}}, {"logit_bias": {3: 101}}, {"logit_bias": {"3": 1}},
    {"min_tokens": -1}, {"min_tokens": 17, "max_tokens": 16}, {"allowed_token_ids": []},
    {"allowed_token_ids": [1, -1]}, {"skip_special_tokens": "no"},
    {"truncate_prompt_tokens": 0}, {"truncate_prompt_tokens": -2},
])
def test_bad_sampling_params_raise_value_error(arguments):
    with pytest.raises(ValueError):
        SamplingParams(**arguments)


def test_truncate_prompt_tokens_keeps_the_prompts_end(llm):
    long = list(range(3, 3 + llm.max_model_len + 40))
    (truncated,) = llm.generate([long], SamplingParams(
        temperature=0, max_tokens=4, truncate_prompt_tokens=16), use_tqdm=False)
    (kept,) = llm.generate([long[-16:]], SamplingParams(temperature=0, max_tokens=4),
                           use_tqdm=False)
    assert truncated.prompt_token_ids == long[-16:]
    assert truncated.outputs[0].token_ids == kept.outputs[0].token_ids


def test_bad_requests_raise_and_the_llm_goes_on(llm):
    too_long = list(range(1, llm.max_model_len + 2))
    with pytest.raises(LlmcRequestError, match="max_model_len"):
        llm.generate([PROMPTS[0], too_long], GREEDY, use_tqdm=False)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        llm.generate([[10**8]], GREEDY, use_tqdm=False)
    with pytest.raises(ValueError, match="prompt"):
        llm.generate([3.5], GREEDY, use_tqdm=False)
    with pytest.raises(ValueError, match="a list of 2"):
        llm.generate(PROMPTS[:2], [GREEDY], use_tqdm=False)
    with pytest.raises(ValueError, match="logprobs"):
        llm.generate(PROMPTS[0], SamplingParams(logprobs=10**6), use_tqdm=False)
    assert texts(llm.generate(PROMPTS[:1], GREEDY, use_tqdm=False))[0]
    assert llm.stats()["num_running"] == 0 and llm.stats()["num_waiting"] == 0


@pytest.mark.parametrize("arguments, message", [
    ({"model": "no/such/model.onnx"}, "not a compiled model"),
    ({"kv_cache_memory": "1GiB", "num_kv_blocks": 64}, "at most one"),
    ({"kv_cache_memory": "lots"}, "kv_cache_memory"),
    ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization"),
    ({"max_num_seqs": 0}, "max_num_seqs"),
])
def test_bad_engine_arguments_raise_value_error(llm, arguments, message):
    arguments = {"model": llm.artifact, **arguments}
    with pytest.raises(ValueError, match=message):
        LLM(**arguments)


def test_async_llm_streams_and_aborts(llm):
    greedy = texts(llm.generate(PROMPTS[:2], GREEDY, use_tqdm=False))

    async def collect(engine, prompt, request_id, **options):
        seen = []
        async for output in engine.generate(prompt, GREEDY, request_id, **options):
            seen.append(output)
        return seen

    async def abandon(engine):
        async for output in engine.generate(PROMPTS[2], SamplingParams(max_tokens=500),
                                            "early"):
            if len(output.outputs[0].token_ids) >= 2:
                break

    async def main():
        engine = AsyncLLM(llm.artifact, num_threads=2, kv_cache_memory="256MiB", quiet=True)
        try:
            streams = await asyncio.gather(collect(engine, PROMPTS[0], "a"),
                                           collect(engine, PROMPTS[1], "b"), abandon(engine))
            with pytest.raises(LlmcRequestError, match="outside the vocabulary"):
                await collect(engine, [10**8], "bad")
            with pytest.raises(LlmcRequestError, match="needs the priority scheduling policy"):
                await collect(engine, PROMPTS[0], "prioritised", priority=1)
            after = await collect(engine, PROMPTS[0], "after")
            return streams[:2], after
        finally:
            engine.shutdown()

    streams, after = asyncio.run(main())
    for stream, expected, request_id in zip(streams, greedy, "ab"):
        assert len(stream) > 1 and [o.finished for o in stream] == [False] * (len(stream) - 1) + [True]
        lengths = [len(o.outputs[0].token_ids) for o in stream]
        assert lengths == sorted(lengths) and lengths[-1] == 24
        assert stream[-1].outputs[0].text == expected
        assert all(o.request_id == request_id for o in stream)
    assert after[-1].outputs[0].text == greedy[0]
