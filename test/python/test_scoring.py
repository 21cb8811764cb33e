"""Scoring: vLLM's score task over a model that pools (LLM.score, `llmc serve`'s /score and
/rerank).

A cross-encoder is optimum's `--task text-classification` export of a classifier of one
label (test/exporters/optimum-reranker/, as rerankers are exported): it reads each (query,
document) pair as one prompt, the `tokenizers` package's encode(query, document), and
scores it by its logit's sigmoid. An embedding model (optimum-feature-extraction/) scores a
pair by the cosine of the two texts' embeddings. A causal LM compiled with
`--classifier-from-token` (optimum/, as LLM rerankers such as Qwen3-Reranker are published)
is a cross-encoder whose score is its LM head's logit of a token, or of one token minus
another, at the prompt's last position.

Checked against onnxruntime on the same files, with the prompts' ids from `tokenizers`:
scores 1:N, N:N and 1:1, without activation, and cut by truncate_prompt_tokens as the
reference tokenizer's truncation cuts them (longest first, on the right); the causal LMs'
scores are onnxruntime's logits of those tokens (an untied, a tied and a biased head, and a
softcapped one by one token); the server's
/score and /rerank (best first, top_n, return_documents) give LLM.score's scores; what
cannot be scored (a classifier of several labels, a generative model, counts that do not
pair) is refused with one clear error, and the server goes on.
"""
from __future__ import annotations

import subprocess

import numpy as np
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

import llmc
from llmc.errors import LlmcRequestError
from llmc.testing.server import Server
from test_embeddings import EXPORTS as EMBEDDING_EXPORTS
from test_embeddings import LLMC, ROOT, compile_export, ort_hidden_states, post

RERANKERS = ROOT / "test" / "exporters" / "optimum-reranker"
FAMILIES = sorted(path.name for path in RERANKERS.iterdir())
QUERY = "which rivers flow into the sea?"
DOCUMENTS = ["the rhine flows into the north sea", "a cat sleeps on the mat",
             "rivers", "def flow(sea): return sea + 1"]


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> dict[str, object]:
    directory = tmp_path_factory.mktemp("scoring")
    built = {family: compile_export(RERANKERS / family / "model.onnx", directory / family)
             for family in FAMILIES}
    built["embedding"] = compile_export(EMBEDDING_EXPORTS / "qwen3" / "model.onnx",
                                        directory / "embedding")
    return built


def reference_tokenizer(export: str) -> Tokenizer:
    return Tokenizer.from_file(str(export / "tokenizer.json"))


def ort_pair_logit(family: str, ids: list[int]) -> float:
    session = ort.InferenceSession(str(RERANKERS / family / "model.onnx"),
                                   providers=["CPUExecutionProvider"])
    feeds = np.array([ids], dtype=np.int64)
    logits = session.run(["logits"], {"input_ids": feeds, "attention_mask": np.ones_like(feeds)})
    return float(logits[0][0][0])


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + np.exp(-x))


@pytest.mark.parametrize("family", FAMILIES)
def test_cross_encoder_scores_match_onnxruntime(artifacts, family):
    """1:N, N:N and 1:1 through a cache of 4 blocks in steps of 16 tokens: each pair's score
    is the sigmoid of onnxruntime's logit on the reference tokenizer's encode(query, doc)."""
    tokenizer = reference_tokenizer(RERANKERS / family)
    queries = [QUERY, "cats", "x", "the sea"]
    with llmc.LLM(artifacts[family], num_kv_blocks=4, max_num_batched_tokens=16) as llm:
        one_to_many = llm.score(QUERY, DOCUMENTS, use_tqdm=False)
        pairwise = llm.score(queries, DOCUMENTS, use_tqdm=False)
        one = llm.score(QUERY, DOCUMENTS[0], use_tqdm=False)
        logits = llm.score(QUERY, DOCUMENTS,
                           pooling_params=llmc.PoolingParams(use_activation=False),
                           use_tqdm=False)
        assert llm.stats()["num_kv_blocks_held"] == 0
    assert len(one_to_many) == len(DOCUMENTS) and len(one) == 1
    for outputs, firsts in ((one_to_many, [QUERY] * 4), (pairwise, queries),
                            (one, [QUERY]), (logits, [QUERY] * 4)):
        for output, first, document in zip(outputs, firsts, DOCUMENTS):
            ids = tokenizer.encode(first, document).ids
            assert output.finished and output.prompt_token_ids == ids
            logit = ort_pair_logit(family, ids)
            expected = logit if outputs is logits else sigmoid(logit)
            assert output.outputs.score == pytest.approx(expected, abs=1e-5), (first, document)


def test_truncation_cuts_the_pair_as_the_reference_tokenizer(artifacts):
    """truncate_prompt_tokens cuts each pair longest first, on the right, as tokenizers'
    truncation does; -1 is max_model_len (no cut here)."""
    tokenizer = reference_tokenizer(RERANKERS / "qwen3")
    long_query = " ".join(["which rivers flow"] * 8)
    tokenizer.enable_truncation(12, strategy="longest_first")
    expected_ids = [tokenizer.encode(long_query, document).ids for document in DOCUMENTS]
    tokenizer.no_truncation()
    with llmc.LLM(artifacts["qwen3"], num_kv_blocks=16) as llm:
        cut = llm.score(long_query, DOCUMENTS, truncate_prompt_tokens=12, use_tqdm=False)
        whole = llm.score(long_query, DOCUMENTS, truncate_prompt_tokens=-1, use_tqdm=False)
        with pytest.raises(ValueError, match="truncate_prompt_tokens"):
            llm.score(QUERY, DOCUMENTS, truncate_prompt_tokens=0)
    for output, ids in zip(cut, expected_ids):
        assert len(ids) == 12 and output.prompt_token_ids == ids
        assert output.outputs.score == pytest.approx(sigmoid(ort_pair_logit("qwen3", ids)),
                                                     abs=1e-5)
    assert [len(o.prompt_token_ids) for o in whole] == [
        len(tokenizer.encode(long_query, d).ids) for d in DOCUMENTS]


def test_embedding_model_scores_by_cosine(artifacts):
    """Each text embedded alone (onnxruntime's last token's hidden state); a pair's score
    is their cosine."""
    export = EMBEDDING_EXPORTS / "qwen3"
    tokenizer = reference_tokenizer(export)

    def embedding(text: str) -> np.ndarray:
        return ort_hidden_states(export / "model.onnx", tokenizer.encode(text).ids)[-1]

    query = embedding(QUERY)
    with llmc.LLM(artifacts["embedding"], num_kv_blocks=8) as llm:
        outputs = llm.score(QUERY, DOCUMENTS, use_tqdm=False)
    for output, document in zip(outputs, DOCUMENTS):
        other = embedding(document)
        cosine = float(query @ other / (np.linalg.norm(query) * np.linalg.norm(other)))
        assert output.outputs.score == pytest.approx(cosine, abs=1e-5), document
        assert output.prompt_token_ids == (tokenizer.encode(QUERY).ids
                                           + tokenizer.encode(document).ids)


GENERATIVE = ROOT / "test" / "exporters" / "optimum"
# Family, and how many tokens score: the head untied, tied to the embedding, with a bias
# (Phi-2's), softcapped (Gemma-2's: one token keeps the softcap).
CAUSAL_SCORERS = [("qwen3", 2), ("llama-tied", 2), ("phi2", 2), ("gemma2", 1)]


def scoring_tokens(family: str, count: int) -> list[str]:
    """Two ordinary tokens of the family's vocabulary (ids 300 and 301), as the tokenizer
    spells them: the first stands for "no", the second for "yes"."""
    vocab = reference_tokenizer(GENERATIVE / family).get_vocab()
    by_id = {token_id: token for token, token_id in vocab.items()}
    return [by_id[300], by_id[301]][-count:]


@pytest.mark.parametrize("family,count", CAUSAL_SCORERS)
def test_causal_lm_scored_by_tokens_matches_onnxruntime(tmp_path, family, count):
    """--classifier-from-token no,yes: each pair's score is the sigmoid of onnxruntime's
    logit of "yes" minus that of "no" (or of "yes" alone) at the pair's last token."""
    from llmc.testing.ort_reference import OrtDecoder
    tokens = scoring_tokens(family, count)
    export = GENERATIVE / family
    artifact = compile_export(export / "model.onnx", tmp_path / "scorer",
                              "--classifier-from-token", ",".join(tokens))
    vocab = reference_tokenizer(export).get_vocab()
    ids = [vocab[token] for token in tokens]
    reference = OrtDecoder(export / "model.onnx")
    tokenizer = reference_tokenizer(export)
    with llmc.LLM(artifact, num_kv_blocks=16) as llm:
        outputs = llm.score(QUERY, DOCUMENTS, use_tqdm=False)
    for output, document in zip(outputs, DOCUMENTS):
        prompt = tokenizer.encode(QUERY, document).ids
        assert output.prompt_token_ids == prompt
        logits, _ = reference.forward(np.array([prompt]), np.ones((1, len(prompt)), np.int64))
        last = logits[0, -1]
        logit = last[ids[-1]] - (last[ids[0]] if count == 2 else 0.0)
        assert output.outputs.score == pytest.approx(sigmoid(float(logit)), abs=1e-5), document


def test_scoring_by_tokens_refusals(tmp_path):
    for export, tokens, fragment in [
        (GENERATIVE / "qwen3", "no-such-token", "the tokenizer has no token 'no-such-token'"),
        (GENERATIVE / "qwen3", "a,b,c", "takes one token or two"),
        (GENERATIVE / "gemma2", ",".join(scoring_tokens("gemma2", 2)),
         "does not commute with the difference of two tokens' logits"),
        (EMBEDDING_EXPORTS / "qwen3", "Ġthe", "has 0 LM heads"),
    ]:
        result = subprocess.run([str(LLMC), "compile", str(export / "model.onnx"), "-o",
                                 str(tmp_path / "refused"), "--quiet",
                                 "--classifier-from-token", tokens],
                                capture_output=True, text=True)
        assert result.returncode == 1 and fragment in result.stderr, (export, result.stderr)
        assert result.stderr.count("error") == 1, result.stderr


def test_what_cannot_be_scored_is_refused(artifacts, tmp_path):
    from test_classification import EXPORTS as CLASSIFIER_EXPORTS
    classifier = compile_export(CLASSIFIER_EXPORTS / "qwen3" / "model.onnx", tmp_path / "c")
    with llmc.LLM(classifier, num_kv_blocks=8) as llm:
        with pytest.raises(LlmcRequestError, match="a classifier of 3 labels"):
            llm.score(QUERY, DOCUMENTS)
    with llmc.LLM(artifacts["qwen3"], num_kv_blocks=8) as llm:
        with pytest.raises(LlmcRequestError, match="1:1, 1:N or N:N texts, not 2:4"):
            llm.score([QUERY, QUERY], DOCUMENTS)
        with pytest.raises(LlmcRequestError, match="at least one text"):
            llm.score(QUERY, [])
        with pytest.raises(ValueError, match="data_2 must be a str or a list of str"):
            llm.score(QUERY, [[1, 2]])
        with pytest.raises(LlmcRequestError, match="max_model_len"):
            llm.score(QUERY, "word " * llm.max_model_len)
        assert llm.stats()["num_kv_blocks_held"] == 0
        # Still serving.
        assert len(llm.score(QUERY, DOCUMENTS[:1], use_tqdm=False)) == 1


@pytest.fixture(scope="module")
def server(artifacts):
    with Server(LLMC, artifacts["llama-gqa"], "--kv-cache-memory", "4MiB") as running:
        yield running


def test_server_score_and_rerank_match_llm_score(artifacts, server):
    with llmc.LLM(artifacts["llama-gqa"], num_kv_blocks=16) as llm:
        expected = [o.outputs.score for o in llm.score(QUERY, DOCUMENTS, use_tqdm=False)]
        tokens = sum(len(o.prompt_token_ids) for o in llm.score(QUERY, DOCUMENTS,
                                                                  use_tqdm=False))
    for path in ("/score", "/v1/score"):
        status, body = post(server, path, {"model": server.model, "text_1": QUERY,
                                           "text_2": DOCUMENTS})
        assert status == 200, body
        assert body["object"] == "list" and body["id"].startswith("score-")
        assert [item["index"] for item in body["data"]] == [0, 1, 2, 3]
        assert all(item["object"] == "score" for item in body["data"])
        np.testing.assert_allclose([item["score"] for item in body["data"]], expected,
                                   atol=1e-6)
        assert body["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens,
                                 "completion_tokens": 0}
    best_first = sorted(range(len(DOCUMENTS)), key=lambda i: -expected[i])
    for path in ("/rerank", "/v1/rerank", "/v2/rerank"):
        status, body = post(server, path, {"query": QUERY, "documents": DOCUMENTS})
        assert status == 200, body
        assert body["id"].startswith("rerank-") and body["model"] == server.model
        assert [result["index"] for result in body["results"]] == best_first
        for result in body["results"]:
            assert result["document"] == {"text": DOCUMENTS[result["index"]]}
            assert result["relevance_score"] == pytest.approx(expected[result["index"]],
                                                              abs=1e-6)
        assert body["usage"] == {"total_tokens": tokens}
    status, body = post(server, "/rerank", {"query": QUERY, "top_n": 2, "return_documents": False,
                                            "documents": [{"text": d} for d in DOCUMENTS]})
    assert status == 200, body
    assert [result["index"] for result in body["results"]] == best_first[:2]
    assert all("document" not in result for result in body["results"])


def test_server_scoring_refusals_leave_it_serving(server):
    for path, request, fragment in [
        ("/score", {"text_2": "a"}, "'text_1' is required"),
        ("/score", {"text_1": ["a", "b"], "text_2": ["c", "d", "e"]}, "not 2:3"),
        ("/score", {"text_1": "a", "text_2": [1]}, "'text_2' must be"),
        ("/rerank", {"query": "q", "documents": []}, "'documents' must be a non-empty list"),
        ("/rerank", {"query": "q", "documents": ["a"], "model": "another"}, "model"),
        ("/rerank", {"query": "q", "documents": ["word " * 5000]}, "max_model_len"),
        ("/v1/embeddings", {"input": "hi"}, "/v1/embeddings needs an embedding model"),
    ]:
        status, body = post(server, path, request)
        assert status in (400, 404), (path, request, body)
        assert fragment in body["error"]["message"], (path, request, body)
    assert post(server, "/score", {"text_1": "still", "text_2": "here"})[0] == 200
    server.wait_for_idle()


def test_hf_overrides_compile_a_causal_lm_as_a_cross_encoder(tmp_path, monkeypatch):
    """vLLM's Qwen3-Reranker recipe, hf_overrides, compiles the ONNX export with
    --classifier-from-token; what llmc does not take is refused by name."""
    monkeypatch.setenv("LLMC_CACHE_DIR", str(tmp_path / "cache"))
    tokens = scoring_tokens("qwen3", 2)
    artifact = compile_export(GENERATIVE / "qwen3" / "model.onnx", tmp_path / "scorer",
                              "--classifier-from-token", ",".join(tokens))
    overrides = {"architectures": ["Qwen3ForSequenceClassification"],
                 "classifier_from_token": tokens, "is_original_qwen3_reranker": True}
    with llmc.LLM(GENERATIVE / "qwen3" / "model.onnx", hf_overrides=overrides, quiet=True,
                  num_kv_blocks=8) as llm:
        through_overrides = [o.outputs.score for o in llm.score(QUERY, DOCUMENTS,
                                                                  use_tqdm=False)]
    with llmc.LLM(artifact, num_kv_blocks=8) as llm:
        compiled = [o.outputs.score for o in llm.score(QUERY, DOCUMENTS, use_tqdm=False)]
    assert through_overrides == compiled
    for overrides, fragment in [({"num_labels": 1}, "not num_labels"),
                                ({"is_matryoshka": 1}, "must be a bool"),
                                ({"classifier_from_token": "yes"}, "a list of one or two"),
                                ({"classifier_from_token": ["a", "b", "c"]}, "one or two"),
                                ({"classifier_from_token": ["yes"],
                                  "architectures": ["Qwen3ForCausalLM"]}, "architectures")]:
        with pytest.raises(ValueError, match=fragment):
            llmc.LLM(GENERATIVE / "qwen3" / "model.onnx", hf_overrides=overrides)
    with pytest.raises(ValueError, match="compiled already"):
        llmc.LLM(artifact, hf_overrides={"classifier_from_token": tokens})
