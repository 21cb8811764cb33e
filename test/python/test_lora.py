"""LoRA adapters by request against onnxruntime on the merged model.

test/exporters/optimum-lora/llama-gqa/<adapter>/ holds a PEFT adapter (seeded at random) of
the Llama that test/exporters/optimum/llama-gqa is optimum's export of, and merged/model.onnx,
optimum's export of the model with the adapter merged into its weights (merge_and_unload);
scripts/make-exporter-fixtures.sh makes both from the same model. llmc compiles the base
export with --enable-lora and runs the adapter on it; onnxruntime runs the merged export.
Checked:

  * each adapter's logits on a prefill of three prompts and the decode steps after it are
    the merged export's within 1e-4 relative;
  * one ragged step of sequences without an adapter and with each adapter: each row is its
    own reference's (the base rows the base export's);
  * LLM.generate with lora_request (one for every prompt, one per prompt, None), and
    AsyncLLM.generate: the greedy tokens are onnxruntime's on the merged export; a prompt
    computed first without the adapter and then with it gets the adapter's tokens (its
    cached prefix is not shared);
  * `llmc serve --lora-modules`: each adapter is a model of its own, whose completions are
    the merged export's greedy tokens; /v1/load_lora_adapter and /v1/unload_lora_adapter
    change them while serving (with --allow-runtime-lora-updating);
  * refusals: an adapter for an artifact compiled without --enable-lora, a rank above
    max_lora_rank, a LoRARequest id reused for another directory, bad --lora-modules.
"""
from __future__ import annotations

import asyncio
import json
import subprocess
import urllib.error
import urllib.request

import numpy as np
import openai
import pytest

from llmc import LLM, AsyncLLM, LlmcRuntimeError, LoRARequest, SamplingParams
from llmc.runtime import Model
from llmc.testing.paged import PagedRunner
from llmc.testing.server import Server
from test_exporters import EXPORTS_DIR, LLMC, MAX_REL_ERROR, reference_steps, seeded_prompts
from test_quantized_cpu import compile_model

BASE = EXPORTS_DIR / "optimum/llama-gqa/model.onnx"
ADAPTERS = EXPORTS_DIR / "optimum-lora/llama-gqa"
NAMES = ("attention", "mlp-layer1")
DECODE_STEPS = 8
NUM_KV_BLOCKS = 64


def merged(name: str):
    return ADAPTERS / name / "merged" / "model.onnx"


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    return compile_model(BASE, tmp_path_factory.mktemp("lora") / "model.llmc", "--enable-lora")


@pytest.fixture(scope="module")
def references():
    """Each reference's logits (the base export's under None) on the seeded prompts: the
    prefill's last rows, then the decode steps fed its own greedy tokens."""
    prompts = seeded_prompts(512)
    return {name: reference_steps(merged(name) if name else BASE, prompts)[:DECODE_STEPS + 1]
            for name in (None, *NAMES)}


def relative_error(ours: np.ndarray, reference: np.ndarray) -> float:
    assert np.isfinite(ours).all()
    return float(np.max(np.abs(ours - reference)) / np.abs(reference).max())


def test_the_sites_are_the_decoder_layers_linears(artifact):
    with Model(artifact, num_kv_blocks=NUM_KV_BLOCKS) as model:
        # Two layers of q, k, v, o, gate, up and down.
        assert model.num_lora_sites == 14


@pytest.mark.parametrize("name", NAMES)
def test_an_adapters_logits_are_the_merged_models(artifact, references, name):
    prompts = seeded_prompts(512)
    reference = references[name]
    with Model(artifact, num_kv_blocks=NUM_KV_BLOCKS) as model:
        adapter = model.load_lora(ADAPTERS / name)
        runner = PagedRunner(model)
        steps = [runner.prefill(prompts, loras=[adapter] * len(prompts))]
        for step in range(DECODE_STEPS):
            steps.append(runner.decode(reference[step].argmax(axis=-1)))
        runner.release()
    for step, (ours, theirs) in enumerate(zip(steps, reference)):
        assert relative_error(ours, theirs) < MAX_REL_ERROR, f"step {step}"
    # The adapter changes the model: the base export's logits are far from these.
    assert relative_error(steps[0], references[None][0]) > 100 * MAX_REL_ERROR


def test_one_step_serves_every_adapter_and_none(artifact, references):
    """Prompt i runs with adapter loras[i]: in one ragged step, each sequence's rows are its
    own reference's."""
    prompts = seeded_prompts(512)
    names = [None, "attention", "mlp-layer1"]
    with Model(artifact, num_kv_blocks=NUM_KV_BLOCKS) as model:
        loaded = {name: model.load_lora(ADAPTERS / name) for name in NAMES}
        runner = PagedRunner(model)
        steps = [runner.prefill(prompts, loras=[loaded.get(name) for name in names])]
        fed = np.array([references[name][0][i].argmax() for i, name in enumerate(names)])
        steps.append(runner.decode(fed))
        runner.release()
    for i, name in enumerate(names):
        assert relative_error(steps[0][i], references[name][0][i]) < MAX_REL_ERROR, name
        assert relative_error(steps[1][i], references[name][1][i]) < MAX_REL_ERROR, name


@pytest.fixture(scope="module")
def llm():
    with LLM(BASE, enable_lora=True, max_lora_rank=8, num_kv_blocks=NUM_KV_BLOCKS,
             quiet=True) as served:
        yield served


def test_generate_runs_each_prompt_with_its_adapter(llm, references):
    prompts = seeded_prompts(512)
    params = SamplingParams(temperature=0, max_tokens=DECODE_STEPS + 1)
    requests = {name: LoRARequest(name, index + 1, str(ADAPTERS / name))
                for index, name in enumerate(NAMES)}

    def expected(name, prompt):
        return [int(step[prompt].argmax()) for step in references[name]]

    every = llm.generate(prompts, params, lora_request=requests["attention"], use_tqdm=False)
    assert [out.outputs[0].token_ids for out in every] == \
        [expected("attention", i) for i in range(len(prompts))]
    names = ["mlp-layer1", None, "attention"]
    mixed = llm.generate(prompts, params, use_tqdm=False,
                         lora_request=[requests.get(name) for name in names])
    assert [out.outputs[0].token_ids for out in mixed] == \
        [expected(name, i) for i, name in enumerate(names)]


def test_async_generate_takes_a_lora_request(references):
    prompt = seeded_prompts(512)[2]
    params = SamplingParams(temperature=0, max_tokens=DECODE_STEPS + 1)

    adapter = LoRARequest("a", 1, str(ADAPTERS / "attention"))

    async def generate(llm):
        final = None
        async for output in llm.generate(prompt, params, "r0", lora_request=adapter):
            final = output
        return final.outputs[0].token_ids

    llm = AsyncLLM(BASE, enable_lora=True, max_lora_rank=8, num_kv_blocks=NUM_KV_BLOCKS,
                   quiet=True)
    try:
        tokens = asyncio.run(generate(llm))
    finally:
        llm.shutdown()
    assert tokens == [int(step[2].argmax()) for step in references["attention"]]


def test_a_prefix_cached_without_the_adapter_is_not_reused(llm, references):
    """The 27-token prompt fills a block: computed first without the adapter, its block is
    cached; with the adapter it is computed again, and the tokens are the adapter's."""
    prompt = seeded_prompts(512)[1]
    params = SamplingParams(temperature=0, max_tokens=DECODE_STEPS + 1)
    base = llm.generate([prompt], params, use_tqdm=False)[0].outputs[0].token_ids
    assert base == [int(step[1].argmax()) for step in references[None]]
    adapted = llm.generate([prompt], params, use_tqdm=False,
                           lora_request=LoRARequest("attention", 1, str(ADAPTERS / "attention")))
    assert adapted[0].outputs[0].token_ids == \
        [int(step[1].argmax()) for step in references["attention"]]


def test_adapters_are_refused_by_name(llm, tmp_path):
    with pytest.raises(LlmcRuntimeError, match="rank 8, above max_lora_rank 4"):
        with Model(compile_model(BASE, tmp_path / "lora.llmc", "--enable-lora"),
                   num_kv_blocks=8) as model:
            model.load_lora(ADAPTERS / "attention", max_rank=4)
    llm.generate([[5, 6]], lora_request=LoRARequest("a", 1, str(ADAPTERS / "attention")),
                 use_tqdm=False)
    with pytest.raises(ValueError, match="lora_int_id 1 is"):
        llm.generate([[5, 6]], lora_request=[LoRARequest("x", 1, str(ADAPTERS / "mlp-layer1"))],
                     use_tqdm=False)
    with pytest.raises(ValueError, match="lora_int_id must be an int >= 1"):
        LoRARequest("x", 0, str(ADAPTERS / "attention"))
    with pytest.raises(LlmcRuntimeError, match="no adapter_config.json"):
        llm.generate([[5, 6]], lora_request=LoRARequest("x", 9, str(tmp_path)), use_tqdm=False)


def test_an_artifact_without_sites_serves_no_adapter(tmp_path):
    plain = compile_model(BASE, tmp_path / "plain.llmc")
    with Model(plain, num_kv_blocks=8) as model:
        assert model.num_lora_sites == 0
        with pytest.raises(LlmcRuntimeError, match="compiled without LoRA sites"):
            model.load_lora(ADAPTERS / "attention")
    with pytest.raises(ValueError, match="compiled without LoRA sites"):
        LLM(plain, enable_lora=True, num_kv_blocks=8)
    with LLM(plain, num_kv_blocks=8) as served:
        with pytest.raises(ValueError, match="serves no LoRA adapter"):
            served.generate([[5, 6]], lora_request=LoRARequest("a", 1, str(ADAPTERS / "attention")),
                            use_tqdm=False)


def test_the_server_serves_each_adapter_as_a_model(artifact, references):
    """`llmc serve --lora-modules NAME=PATH ...`: /v1/models lists each adapter under its
    name with the base model as parent, and a completion naming it runs with it."""
    prompt = seeded_prompts(512)[0]
    with Server(LLMC, artifact, "--lora-modules", f"attention={ADAPTERS / 'attention'}",
                f"mlp={ADAPTERS / 'mlp-layer1'}") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="unused")
        listed = [(model.id, model.parent) for model in client.models.list().data]
        assert listed == [(server.model, None), ("attention", server.model),
                          ("mlp", server.model)]
        for model, name in ((server.model, None), ("attention", "attention"),
                            ("mlp", "mlp-layer1")):
            completion = client.completions.create(
                model=model, prompt=prompt, max_tokens=DECODE_STEPS + 1, temperature=0,
                logprobs=1, extra_body={"ignore_eos": True, "return_tokens_as_token_ids": True})
            assert completion.model == model
            tokens = [int(token.split(":")[1]) for token in completion.choices[0].logprobs.tokens]
            assert tokens == [int(step[0].argmax()) for step in references[name]], model
        with pytest.raises(openai.NotFoundError, match="'nope' does not exist"):
            client.completions.create(model="nope", prompt=[5, 6], max_tokens=1)
        with pytest.raises(openai.BadRequestError, match="'mlp' is a LoRA adapter"):
            client.embeddings.create(model="mlp", input=[5, 6])


@pytest.mark.parametrize("args, message", [
    (["--lora-modules", "a"], "--lora-modules takes NAME=PATH, not 'a'"),
    (["--lora-modules", "a=/nonexistent"], "LoRA adapter /nonexistent: no adapter_config.json"),
    (["--lora-modules", f"a={ADAPTERS / 'attention'}", "--max-lora-rank", "4"],
     "rank 8, above max_lora_rank 4"),
])
def test_the_server_refuses_bad_adapters_at_start(artifact, args, message):
    result = subprocess.run([str(LLMC), "serve", str(artifact), "--port", "0", *args],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert message in result.stderr


def test_adapters_load_and_unload_while_serving(artifact, references):
    """vLLM's /v1/load_lora_adapter and /v1/unload_lora_adapter, with
    --allow-runtime-lora-updating: a loaded adapter is a model at once; an unloaded one is
    gone; without the flag both endpoints are refused."""
    prompt = seeded_prompts(512)[0]
    expected = [int(step[0].argmax()) for step in references["mlp-layer1"]]
    with Server(LLMC, artifact, "--allow-runtime-lora-updating") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="unused")

        def complete(model):
            completion = client.completions.create(
                model=model, prompt=prompt, max_tokens=DECODE_STEPS + 1, temperature=0,
                logprobs=1, extra_body={"ignore_eos": True, "return_tokens_as_token_ids": True})
            return [int(token.split(":")[1]) for token in completion.choices[0].logprobs.tokens]

        load = {"lora_name": "mlp", "lora_path": str(ADAPTERS / "mlp-layer1")}
        status, text = post_text(server, "/v1/load_lora_adapter", load)
        assert (status, text) == (200, "Success: LoRA adapter 'mlp' added successfully.")
        assert [model.id for model in client.models.list().data] == [server.model, "mlp"]
        assert complete("mlp") == expected
        assert post_text(server, "/v1/load_lora_adapter", load)[0] == 400  # the id is taken
        bad = {"lora_name": "bad", "lora_path": "/nonexistent"}
        status, text = post_text(server, "/v1/load_lora_adapter", bad)
        assert status == 400 and "no adapter_config.json" in text
        status, text = post_text(server, "/v1/unload_lora_adapter", {"lora_name": "mlp"})
        assert (status, text) == (200, "Success: LoRA adapter 'mlp' removed successfully.")
        with pytest.raises(openai.NotFoundError):
            complete("mlp")
        assert post_text(server, "/v1/unload_lora_adapter", {"lora_name": "mlp"})[0] == 404
    with Server(LLMC, artifact) as server:
        status, text = post_text(server, "/v1/load_lora_adapter", load)
        assert status == 404 and "--allow-runtime-lora-updating" in text


def post_text(server: Server, path: str, body: dict) -> tuple[int, str]:
    """POST a JSON body; the status and the response's text."""
    request = urllib.request.Request(server.url + path,
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
