"""Embedding models: optimum's `--task feature-extraction` exports (the decoder without its
LM head, returning last_hidden_state, as Qwen3-Embedding, gte-Qwen2 and e5-mistral are
exported; and of sentence-transformers models, its default for them, whose graph pools the
last token and normalises it into `sentence_embedding`) compiled into artifacts whose step
returns final hidden states.

Checked against onnxruntime on the same file: the step's rows are the export's
last_hidden_state at each sequence's last token (ragged, chunked, at every -O level);
LLM.embed, `llmc serve`'s /v1/embeddings (through the official `openai` client, base64 and
float) give that row L2-normalised (or not, when asked), on prompts embedded many at once
through a small KV cache in chunks; a Matryoshka model's embeddings cut to `dimensions`
(from `--matryoshka-dimensions`, config.json or hf_overrides) are onnxruntime's leading
features normalised; generation on an embedding model and embeddings of a generative one
are refused with one clear error, and the server goes on.
"""
from __future__ import annotations

import base64
import json
import os
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import onnxruntime as ort
import openai
import pytest

import llmc
from llmc.errors import LlmcRequestError
from llmc.runtime import Model
from llmc.testing.paged import PagedRunner
from llmc.testing.server import Server

ROOT = Path(__file__).resolve().parents[2]
LLMC = Path(os.environ.get("LLMC_BUILD_DIR", ROOT / "build")) / "bin" / "llmc"
EXPORTS = ROOT / "test" / "exporters" / "optimum-feature-extraction"
FAMILIES = sorted(path.name for path in EXPORTS.iterdir())
GENERATIVE = ROOT / "test" / "exporters" / "optimum" / "qwen3" / "model.onnx"
MAX_REL_ERROR = 1e-4


def compile_export(onnx_path: Path, out: Path, *args: str) -> Path:
    subprocess.run([str(LLMC), "compile", str(onnx_path), "-o", str(out), "--quiet", *args],
                   check=True)
    return out


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("embeddings")
    return {family: compile_export(EXPORTS / family / "model.onnx", directory / family)
            for family in FAMILIES}


def ort_hidden_states(onnx_path: Path, prompt: list[int]) -> np.ndarray:
    """onnxruntime's last_hidden_state of the prompt alone: [len(prompt), hidden]."""
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    ids = np.array([prompt], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    if "position_ids" in {i.name for i in session.get_inputs()}:
        feeds["position_ids"] = np.arange(len(prompt), dtype=np.int64)[None]
    return session.run(["last_hidden_state"], feeds)[0][0]


def relative_error(ours: np.ndarray, reference: np.ndarray) -> float:
    return float(np.max(np.abs(ours - reference)) / np.abs(reference).max())


def unit(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


def seeded_prompts(lengths: tuple[int, ...], seed: int = 7) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(3, 512, size=n).tolist() for n in lengths]


def test_manifest_says_hidden_states(artifacts):
    for family, artifact in artifacts.items():
        manifest = json.loads((artifact / "manifest.json").read_text())
        assert manifest["step"]["output"] == "hidden_states", family
        # The vocabulary comes from the token table: the model has no head.
        assert manifest["model"]["vocab_size"] == 512, family
        with Model(artifact, num_kv_blocks=16) as model:
            assert model.outputs_hidden_states
            assert model.output_size == model.hidden_size == 64


@pytest.mark.parametrize("family", FAMILIES)
def test_step_rows_are_the_last_hidden_state(artifacts, family):
    """One ragged prefill of three prompts, then a step per token of their continuations:
    every row is onnxruntime's hidden state of that sequence's last token."""
    onnx_path = EXPORTS / family / "model.onnx"
    prompts = seeded_prompts((11, 27, 4))
    with Model(artifacts[family], num_kv_blocks=64) as model:
        runner = PagedRunner(model)
        rows = runner.prefill(prompts)
        sequences = [list(p) for p in prompts]
        for step in range(4):
            for index, sequence in enumerate(sequences):
                expected = ort_hidden_states(onnx_path, sequence)[-1]
                error = relative_error(rows[index], expected)
                assert error < MAX_REL_ERROR, f"{family} step {step} row {index}: {error:.3g}"
            following = [(7 * step + 11 * index) % 500 + 3 for index in range(len(sequences))]
            for sequence, token in zip(sequences, following):
                sequence.append(token)
            rows = runner.decode(np.array(following))
        runner.release()


@pytest.mark.parametrize("opt_level", ["-O0", "-O3"])
def test_every_fusion_level_gives_the_same_rows(artifacts, tmp_path, opt_level):
    onnx_path = EXPORTS / "qwen3" / "model.onnx"
    prompts = seeded_prompts((9, 20))
    with Model(artifacts["qwen3"], num_kv_blocks=32) as model:
        runner = PagedRunner(model)
        default_rows = runner.prefill(prompts)
        runner.release()
    other = compile_export(onnx_path, tmp_path / "other.llmc", opt_level)
    with Model(other, num_kv_blocks=32) as model:
        runner = PagedRunner(model)
        np.testing.assert_array_equal(runner.prefill(prompts), default_rows)
        runner.release()


def test_llm_embed_matches_onnxruntime(artifacts):
    """LLM.embed on text and token ids, normalised and not, through a cache of 4 blocks and
    steps of 16 tokens: the long prompts are computed in chunks, a few at a time, and the
    embeddings do not move."""
    onnx_path = EXPORTS / "qwen3" / "model.onnx"
    texts = ["a question about rivers and the sea", "def add(a, b): return a + b", "x"]
    ids = seeded_prompts((40, 33, 5, 47, 12, 29))
    with llmc.LLM(artifacts["qwen3"], num_kv_blocks=4, max_num_batched_tokens=16) as llm:
        outputs = llm.embed(texts + ids, use_tqdm=False)
        raw = llm.embed(ids[:2], llmc.PoolingParams(normalize=False), use_tqdm=False)
        stats = llm.stats()
        encoded = [llm.get_tokenizer().encode(text) for text in texts]
    assert stats["num_steps"] >= sum(len(p) for p in ids) // 16
    assert stats["num_kv_blocks_held"] == 0
    assert [output.prompt_token_ids for output in outputs[:3]] == encoded
    for output in outputs:
        expected = unit(ort_hidden_states(onnx_path, output.prompt_token_ids)[-1])
        embedding = np.array(output.outputs.embedding)
        assert output.finished and output.outputs.hidden_size == 64
        assert relative_error(embedding, expected) < MAX_REL_ERROR
        assert abs(np.linalg.norm(embedding) - 1) < 1e-5
    for output, prompt in zip(raw, ids):
        expected = ort_hidden_states(onnx_path, prompt)[-1]
        assert relative_error(np.array(output.outputs.embedding), expected) < MAX_REL_ERROR


def test_generation_and_embeddings_are_refused_where_they_do_not_apply(artifacts, tmp_path):
    with llmc.LLM(artifacts["qwen3"], num_kv_blocks=8) as llm:
        with pytest.raises(ValueError, match="embedding model"):
            llm.generate(["hello"])
    generative = compile_export(GENERATIVE, tmp_path / "generative.llmc")
    with llmc.LLM(generative, num_kv_blocks=8) as llm:
        with pytest.raises(ValueError, match="embed\\(\\) needs an embedding model"):
            llm.embed(["hello"])
    with llmc.LLM(artifacts["qwen3"], num_kv_blocks=8) as llm:
        with pytest.raises(LlmcRequestError, match="max_model_len"):
            llm.embed([[5] * (llm.max_model_len + 1)], use_tqdm=False)
        # A prompt of max_model_len tokens fits: nothing is generated after it.
        assert llm.embed([[5] * llm.max_model_len], use_tqdm=False)[0].finished


def cuda_compile_error(onnx_path: Path, tmp_path: Path) -> str:
    """The one line `llmc compile --target cuda` fails with on `onnx_path`."""
    result = subprocess.run([str(LLMC), "compile", str(onnx_path), "-o",
                             str(tmp_path / "cuda.llmc"), "--target", "cuda:sm_90"],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    return result.stderr


def test_compile_refuses_an_embedding_model_for_cuda(tmp_path):
    error = cuda_compile_error(EXPORTS / "qwen3" / "model.onnx", tmp_path)
    assert "returns hidden states" in error and "generation only" in error


@pytest.fixture(scope="module")
def server(artifacts):
    with Server(LLMC, artifacts["qwen3"], "--kv-cache-memory", "4MiB") as running:
        yield running


def test_server_embeddings_match_onnxruntime(server):
    onnx_path = EXPORTS / "qwen3" / "model.onnx"
    client = openai.OpenAI(base_url=server.base_url, api_key="unused")
    texts = ["a question about rivers and the sea", "x y z"]
    # The openai client asks for base64 and decodes it.
    response = client.embeddings.create(model=server.model, input=texts)
    assert [item.index for item in response.data] == [0, 1]
    as_floats = client.embeddings.create(model=server.model, input=texts,
                                         encoding_format="float")
    tokenize = json.loads(urllib.request.urlopen(urllib.request.Request(
        server.url + "/tokenize", json.dumps({"prompt": texts[0]}).encode(),
        {"Content-Type": "application/json"})).read())
    expected = unit(ort_hidden_states(onnx_path, tokenize["tokens"])[-1])
    assert relative_error(np.array(response.data[0].embedding), expected) < MAX_REL_ERROR
    for base64_item, float_item in zip(response.data, as_floats.data):
        np.testing.assert_array_equal(np.array(base64_item.embedding, dtype=np.float32),
                                      np.array(float_item.embedding, dtype=np.float32))
    assert response.usage.prompt_tokens == as_floats.usage.prompt_tokens > len(texts)
    ids = seeded_prompts((30, 8))
    by_ids = client.embeddings.create(model=server.model, input=ids, encoding_format="float")
    for item, prompt in zip(by_ids.data, ids):
        expected = unit(ort_hidden_states(onnx_path, prompt)[-1])
        assert relative_error(np.array(item.embedding), expected) < MAX_REL_ERROR
    assert by_ids.usage.prompt_tokens == 38


def post(server, path: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(server.url + path, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_server_raw_base64_and_refusals(server):
    status, body = post(server, "/v1/embeddings",
                        {"input": [[5, 6, 7]], "encoding_format": "base64", "normalize": False})
    assert status == 200 and body["object"] == "list" and body["data"][0]["object"] == "embedding"
    decoded = np.frombuffer(base64.b64decode(body["data"][0]["embedding"]), dtype=np.float32)
    expected = ort_hidden_states(EXPORTS / "qwen3" / "model.onnx", [5, 6, 7])[-1]
    assert relative_error(decoded, expected) < MAX_REL_ERROR
    for request, fragment in [
        ({"input": "hi", "dimensions": 8}, "does not support Matryoshka representation"),
        ({"input": "hi", "encoding_format": "int8"}, "encoding_format"),
        ({}, "'input' is required"),
        ({"input": [[5, 99999]]}, "outside the vocabulary"),
        ({"input": "hi", "model": "another"}, "model"),
    ]:
        status, body = post(server, "/v1/embeddings", request)
        assert status in (400, 404), (request, body)
        assert fragment in body["error"]["message"], (request, body)
    status, body = post(server, "/v1/completions", {"prompt": "hi", "max_tokens": 4})
    assert status == 400 and "embedding model" in body["error"]["message"]
    # The server goes on, with no block held once the requests are done.
    assert post(server, "/v1/embeddings", {"input": "still here"})[0] == 200
    server.wait_for_idle()


def test_matryoshka_dimensions_cut_the_embedding(tmp_path, monkeypatch):
    """A model compiled as Matryoshka (any width, from the flag; or config.json's widths):
    LLM.embed and /v1/embeddings (the openai client's dimensions) give onnxruntime's first
    `dimensions` features, normalised; other widths, and models not trained for it, are
    refused."""
    onnx_path = EXPORTS / "qwen3" / "model.onnx"
    any_width = compile_export(onnx_path, tmp_path / "any", "--matryoshka-dimensions", "any")
    prompts = seeded_prompts((9, 30))
    with llmc.LLM(any_width, num_kv_blocks=8) as llm:
        outputs = llm.embed(prompts, llmc.PoolingParams(dimensions=16), use_tqdm=False)
        raw = llm.embed(prompts, llmc.PoolingParams(dimensions=16, normalize=False),
                        use_tqdm=False)
        with pytest.raises(LlmcRequestError, match="from 1 to the embedding's 64 features"):
            llm.embed(prompts, llmc.PoolingParams(dimensions=65), use_tqdm=False)
    for output, plain, prompt in zip(outputs, raw, prompts):
        full = ort_hidden_states(onnx_path, prompt)[-1]
        assert output.outputs.hidden_size == 16
        assert relative_error(np.array(output.outputs.embedding), unit(full[:16])) < MAX_REL_ERROR
        assert relative_error(np.array(plain.outputs.embedding), full[:16]) < MAX_REL_ERROR

    with Server(LLMC, any_width, "--kv-cache-memory", "4MiB") as running:
        client = openai.OpenAI(base_url=running.base_url, api_key="unused")
        response = client.embeddings.create(model=running.model, input=[prompts[0]],
                                            dimensions=16)
        np.testing.assert_allclose(response.data[0].embedding, outputs[0].outputs.embedding,
                                   atol=1e-6)
        status, body = post(running, "/v1/embeddings", {"input": "hi", "dimensions": 0})
        assert status == 400 and body["error"]["param"] == "dimensions"

    # config.json's widths, beside a copy of the export.
    export = tmp_path / "export"
    export.mkdir()
    for file in (EXPORTS / "qwen3").iterdir():
        (export / file.name).symlink_to(file)
    config = json.loads((EXPORTS / "qwen3" / "config.json").read_text())
    (export / "config.json").unlink()
    (export / "config.json").write_text(json.dumps({**config, "matryoshka_dimensions": [16, 32]}))
    widths = compile_export(export / "model.onnx", tmp_path / "widths")
    manifest = json.loads((widths / "manifest.json").read_text())
    assert manifest["model"]["is_matryoshka"] and manifest["model"]["matryoshka_dimensions"] == [16, 32]
    with llmc.LLM(widths, num_kv_blocks=8) as llm:
        assert len(llm.embed(prompts[:1], llmc.PoolingParams(dimensions=32),
                             use_tqdm=False)[0].outputs.embedding) == 32
        with pytest.raises(LlmcRequestError, match="dimensions 16, 32 only, not 24"):
            llm.embed(prompts[:1], llmc.PoolingParams(dimensions=24), use_tqdm=False)
    # vLLM's hf_overrides compile the same artifact as the flag.
    monkeypatch.setenv("LLMC_CACHE_DIR", str(tmp_path / "cache"))
    with llmc.LLM(onnx_path, hf_overrides={"is_matryoshka": True}, quiet=True,
                  num_kv_blocks=8) as llm:
        through_overrides = llm.embed(prompts, llmc.PoolingParams(dimensions=16),
                                      use_tqdm=False)
    assert [o.outputs.embedding for o in through_overrides] == [
        o.outputs.embedding for o in outputs]
    result = subprocess.run([str(LLMC), "compile", str(GENERATIVE), "-o", str(tmp_path / "g"),
                             "--quiet", "--matryoshka-dimensions", "any"],
                            capture_output=True, text=True)
    assert result.returncode == 1 and "applies to an embedding model" in result.stderr


SENTENCE_TRANSFORMERS = ROOT / "test" / "exporters" / "optimum-sentence-transformers"


@pytest.mark.parametrize("family", ["qwen3", "mistral"])
def test_sentence_transformers_export_embeds_as_its_sentence_embedding(tmp_path, family):
    """optimum's export of a sentence-transformers model (its default for a model with
    modules.json: the last-token pooling and Normalize in the graph, `sentence_embedding`)
    compiles to an embedding model whose LLM.embed is onnxruntime's sentence_embedding."""
    export = SENTENCE_TRANSFORMERS / family
    artifact = compile_export(export / "model.onnx", tmp_path / family)
    manifest = json.loads((artifact / "manifest.json").read_text())
    assert manifest["step"]["output"] == "hidden_states"
    session = ort.InferenceSession(str(export / "model.onnx"), providers=["CPUExecutionProvider"])
    prompts = seeded_prompts((9, 30, 1))
    with llmc.LLM(artifact, num_kv_blocks=8, max_num_batched_tokens=16) as llm:
        outputs = llm.embed(prompts, use_tqdm=False)
    for output, prompt in zip(outputs, prompts):
        ids = np.array([prompt], dtype=np.int64)
        expected = session.run(["sentence_embedding"],
                               {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][0]
        assert relative_error(np.array(output.outputs.embedding), expected) < MAX_REL_ERROR


def test_sentence_transformers_mean_pooling_is_refused_by_name(tmp_path):
    result = subprocess.run([str(LLMC), "compile",
                             str(SENTENCE_TRANSFORMERS / "qwen3-mean" / "model.onnx"), "-o",
                             str(tmp_path / "mean"), "--quiet"], capture_output=True, text=True)
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "only sentence-transformers' last-token pooling is" in result.stderr
