"""Sequence classifiers: optimum's `--task text-classification` exports (a
*ForSequenceClassification model: the decoder, a score head of num_labels on every token, then
a gather of each row's last token that is not the pad token, as reward models and rerankers
are exported) compiled into artifacts whose step returns the score head's logits at each
sequence's last token.

Checked against onnxruntime on the same file (each prompt alone, unpadded): the step's rows
are the export's logits (ragged, chunked), LLM.classify and `llmc serve`'s /classify give
their softmax (or the logits, with use_activation false) and the likeliest label by the
config's names, on prompts classified many at once through a small KV cache in chunks; the
compiler proves the gather picks the last token before it drops it, and the manifest names
the labels; AsyncLLM.encode answers a classifier's and an embedding model's prompts as
LLM.classify and LLM.embed do; generation, embeddings and CUDA are refused with one clear
error, and the server goes on.
"""
from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import llmc
from llmc.errors import LlmcRequestError
from llmc.runtime import Model
from llmc.testing.paged import PagedRunner
from llmc.testing.server import Server
from test_embeddings import (LLMC, ROOT, compile_export, cuda_compile_error, post,
                             relative_error, seeded_prompts)

EXPORTS = ROOT / "test" / "exporters" / "optimum-text-classification"
FAMILIES = sorted(path.name for path in EXPORTS.iterdir())
LABELS = ["class_0", "class_1", "class_2"]
MAX_REL_ERROR = 1e-4


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("classifiers")
    return {family: compile_export(EXPORTS / family / "model.onnx", directory / family)
            for family in FAMILIES}


def ort_logits(family: str, prompt: list[int]) -> np.ndarray:
    """onnxruntime's pooled logits of the prompt alone: [num_labels]."""
    session = ort.InferenceSession(str(EXPORTS / family / "model.onnx"),
                                   providers=["CPUExecutionProvider"])
    ids = np.array([prompt], dtype=np.int64)
    return session.run(["logits"], {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][0]


def softmax(logits: np.ndarray) -> np.ndarray:
    exps = np.exp(logits - logits.max())
    return exps / exps.sum()


def test_manifest_says_class_logits_and_names_the_labels(artifacts):
    for family, artifact in artifacts.items():
        manifest = json.loads((artifact / "manifest.json").read_text())
        assert manifest["step"]["output"] == "class_logits", family
        assert manifest["model"]["num_labels"] == 3, family
        assert manifest["model"]["labels"] == LABELS, family
        # The vocabulary comes from the token table: the score head is not one.
        assert manifest["model"]["vocab_size"] == 512, family
        with Model(artifact, num_kv_blocks=16) as model:
            assert model.outputs_class_logits and not model.outputs_hidden_states
            assert model.output_size == 3 and model.labels == LABELS


@pytest.mark.parametrize("family", FAMILIES)
def test_step_rows_are_the_pooled_logits(artifacts, family):
    """A ragged prefill of three prompts, then steps of one token each: every row is
    onnxruntime's pooled logits of that sequence so far."""
    prompts = seeded_prompts((11, 27, 4))
    with Model(artifacts[family], num_kv_blocks=64) as model:
        runner = PagedRunner(model)
        rows = runner.prefill(prompts)
        sequences = [list(p) for p in prompts]
        for step in range(3):
            for index, sequence in enumerate(sequences):
                error = relative_error(rows[index], ort_logits(family, sequence))
                assert error < MAX_REL_ERROR, f"{family} step {step} row {index}: {error:.3g}"
            following = [(5 * step + 13 * index) % 500 + 3 for index in range(len(sequences))]
            for sequence, token in zip(sequences, following):
                sequence.append(token)
            rows = runner.decode(np.array(following))
        runner.release()


def test_llm_classify_matches_onnxruntime(artifacts):
    """LLM.classify on text and token ids through a cache of 4 blocks and steps of 16
    tokens (long prompts in chunks, a few at a time): softmax probabilities, or the logits
    with use_activation=False."""
    texts = ["is this review positive?", "def add(a, b): return a + b"]
    ids = seeded_prompts((40, 33, 5, 47, 1))
    with llmc.LLM(artifacts["qwen3"], num_kv_blocks=4, max_num_batched_tokens=16) as llm:
        assert llm.labels == LABELS
        outputs = llm.classify(texts + ids, use_tqdm=False)
        raw = llm.classify(ids, llmc.PoolingParams(use_activation=False), use_tqdm=False)
        stats = llm.stats()
    assert stats["num_kv_blocks_held"] == 0
    for output in outputs:
        expected = softmax(ort_logits("qwen3", output.prompt_token_ids))
        assert output.finished and output.outputs.num_classes == 3
        np.testing.assert_allclose(output.outputs.probs, expected, atol=1e-5)
    for output, prompt in zip(raw, ids):
        error = relative_error(np.array(output.outputs.probs), ort_logits("qwen3", prompt))
        assert error < MAX_REL_ERROR


def test_a_probe_that_is_not_the_last_token_keeps_the_gather(tmp_path):
    """The proof, not the pattern, decides: a copy of the export whose gather takes each
    row's first token (ArgMax's operand is zeroed) is refused by name."""
    import onnx
    from onnx import helper
    model = onnx.load(EXPORTS / "qwen3" / "model.onnx")
    argmax = next(node for node in model.graph.node if node.op_type == "ArgMax")
    zero = helper.make_node("Mul", [argmax.input[0], "zero_i32"], ["first_token_scores"])
    model.graph.initializer.append(helper.make_tensor("zero_i32", onnx.TensorProto.INT32, [], [0]))
    model.graph.node.insert(list(model.graph.node).index(argmax), zero)
    argmax.input[0] = "first_token_scores"
    onnx.save(model, tmp_path / "first.onnx")
    result = subprocess.run([str(LLMC), "compile", str(tmp_path / "first.onnx"), "-o",
                             str(tmp_path / "first.llmc"), "--quiet"],
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert "onnx ops not raised to llm" in result.stderr and "onnx.ArgMax" in result.stderr


def test_what_a_classifier_does_not_do_is_refused(artifacts, tmp_path):
    with llmc.LLM(artifacts["qwen3"], num_kv_blocks=8) as llm:
        with pytest.raises(ValueError, match="sequence classifier"):
            llm.generate(["hello"])
        with pytest.raises(ValueError, match="embed\\(\\) needs an embedding model"):
            llm.embed(["hello"])
        with pytest.raises(LlmcRequestError, match="max_model_len"):
            llm.classify([[5] * (llm.max_model_len + 1)], use_tqdm=False)
    generative = compile_export(ROOT / "test" / "exporters" / "optimum" / "qwen3" / "model.onnx",
                                tmp_path / "generative.llmc")
    with llmc.LLM(generative, num_kv_blocks=8) as llm:
        with pytest.raises(ValueError, match="classify\\(\\) needs a sequence classifier"):
            llm.classify(["hello"])
    assert "sequence classifier's logits" in cuda_compile_error(EXPORTS / "qwen3" / "model.onnx",
                                                               tmp_path)


@pytest.fixture(scope="module")
def server(artifacts):
    with Server(LLMC, artifacts["llama-gqa"], "--kv-cache-memory", "4MiB") as running:
        yield running


def test_server_classify_matches_onnxruntime(server):
    ids = seeded_prompts((30, 8, 2))
    for path in ("/classify", "/v1/classify"):
        status, body = post(server, path, {"model": server.model, "input": ids})
        assert status == 200, body
        assert body["object"] == "list" and body["id"].startswith("classify-")
        assert [item["index"] for item in body["data"]] == [0, 1, 2]
        for item, prompt in zip(body["data"], ids):
            expected = softmax(ort_logits("llama-gqa", prompt))
            np.testing.assert_allclose(item["probs"], expected, atol=1e-5)
            assert item["num_classes"] == 3
            assert item["label"] == LABELS[int(np.argmax(expected))]
        assert body["usage"]["prompt_tokens"] == 40
    status, body = post(server, "/classify", {"input": [ids[0]], "use_activation": False})
    assert status == 200
    assert relative_error(np.array(body["data"][0]["probs"]),
                          ort_logits("llama-gqa", ids[0])) < MAX_REL_ERROR
    status, body = post(server, "/classify", {"input": "a text prompt"})
    assert status == 200 and len(body["data"]) == 1


def test_server_refusals_leave_it_serving(server):
    for path, request, fragment in [
        ("/classify", {}, "'input' is required"),
        ("/classify", {"input": [[5, 99999]]}, "outside the vocabulary"),
        ("/classify", {"input": "hi", "use_activation": 1}, "use_activation"),
        ("/classify", {"input": "hi", "model": "another"}, "model"),
        ("/v1/embeddings", {"input": "hi"}, "/v1/embeddings needs an embedding model"),
        ("/v1/completions", {"prompt": "hi", "max_tokens": 4}, "sequence classifier"),
    ]:
        status, body = post(server, path, request)
        assert status in (400, 404), (path, request, body)
        assert fragment in body["error"]["message"], (path, request, body)
    try:
        urllib.request.urlopen(server.url + "/classify", timeout=30)
        raise AssertionError("GET /classify was answered")
    except urllib.error.HTTPError as error:
        assert error.code == 405
    assert post(server, "/classify", {"input": "still here"})[0] == 200
    server.wait_for_idle()


def test_async_llm_encode_classifies_and_embeds(artifacts, tmp_path):
    """AsyncLLM.encode answers each prompt once, finished: a classifier's probabilities, an
    embedding model's embedding (LLM.classify's and LLM.embed's), concurrently; a
    generative model refuses it."""
    import asyncio
    from test_embeddings import EXPORTS as EMBEDDING_EXPORTS

    async def encode_all(engine, prompts, params=None):
        async def one(index, prompt):
            outputs = [output async for output in engine.encode(prompt, params, f"r{index}")]
            assert len(outputs) == 1 and outputs[0].finished
            return outputs[0]
        return await asyncio.gather(*(one(i, p) for i, p in enumerate(prompts)))

    prompts = [{"prompt_token_ids": prompt} for prompt in seeded_prompts((12, 30, 3))]
    engine = llmc.AsyncLLM(artifacts["mistral"], num_kv_blocks=8, quiet=True)
    try:
        outputs = asyncio.run(encode_all(engine, prompts))
        for output, prompt in zip(outputs, prompts):
            expected = softmax(ort_logits("mistral", prompt["prompt_token_ids"]))
            np.testing.assert_allclose(output.outputs.probs, expected, atol=1e-5)
    finally:
        engine.shutdown()
    embedding_model = compile_export(EMBEDDING_EXPORTS / "qwen2" / "model.onnx",
                                     tmp_path / "embed.llmc")
    with llmc.LLM(embedding_model, num_kv_blocks=8) as llm:
        expected = llm.embed(prompts, use_tqdm=False)
    engine = llmc.AsyncLLM(embedding_model, num_kv_blocks=8, quiet=True)
    try:
        outputs = asyncio.run(encode_all(engine, prompts))
        for output, reference in zip(outputs, expected):
            np.testing.assert_array_equal(output.outputs.embedding, reference.outputs.embedding)
    finally:
        engine.shutdown()
    generative = compile_export(ROOT / "test" / "exporters" / "optimum" / "qwen3" / "model.onnx",
                                tmp_path / "generative.llmc")
    engine = llmc.AsyncLLM(generative, num_kv_blocks=8, quiet=True)
    try:
        with pytest.raises(ValueError, match="encode\\(\\) needs a pooling model"):
            asyncio.run(encode_all(engine, prompts[:1]))
    finally:
        engine.shutdown()
