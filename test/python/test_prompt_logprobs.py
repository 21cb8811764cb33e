"""Prompt logprobs (vLLM's prompt_logprobs) against onnxruntime on the same file.

optimum's export of a GQA Llama (test/exporters/optimum/llama-gqa): onnxruntime runs each
prompt whole, and the log-softmax of its logits at position p gives prompt token p + 1's
logprob, its rank and the most likely tokens there. The engine runs each prompt token as a
query row of its own, as many as a step's rows leave. Checked:

  * a prompt alone: every token's logprob, rank and alternatives are onnxruntime's;
  * prompts beside one another in steps of 8 rows (the artifact is compiled for 8
    sequences a step), in a KV cache so small that sequences
    are preempted and recomputed: each token's entry comes once, in order, before the first
    sampled token, and equals the run alone bit for bit; the greedy tokens are those of a
    run without prompt logprobs, and every block is freed;
  * a prompt whose prefix is cached is computed whole (its rows are needed), and the next
    request without prompt logprobs still takes the cached prefix.
"""
from __future__ import annotations

import numpy as np
import pytest

from llmc.engine import Engine
from llmc.runtime import Model
from llmc.testing.ort_reference import OrtDecoder
from test_exporters import EXPORTS_DIR
from test_quantized_cpu import compile_model

EXPORT = EXPORTS_DIR / "optimum/llama-gqa/model.onnx"
TOP = 3
STEP_ROWS = 8
# fp32 logits agree within ~1e-5 relative (test_cpu_parity.py): logprobs within this.
LOGPROB_TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    # Steps of 8 rows: a prompt's rows take several steps.
    return compile_model(EXPORT, tmp_path_factory.mktemp("prompt-logprobs") / "model.llmc",
                         "--max-num-seqs", str(STEP_ROWS))


@pytest.fixture(scope="module")
def prompts():
    rng = np.random.default_rng(3)
    return [rng.integers(3, 512, size=length).tolist() for length in (40, 9, 27, 2)]


def ort_log_softmax(prompt: list[int]) -> np.ndarray:
    """[len(prompt), vocab] log-softmax of onnxruntime's logits, in float64."""
    logits, _ = OrtDecoder(EXPORT).prefill([prompt])
    rows = logits[0].astype(np.float64)
    rows -= rows.max(axis=-1, keepdims=True)
    return rows - np.log(np.exp(rows).sum(axis=-1, keepdims=True))


def run(engine: Engine, prompts, **options):
    """Each request's prompt logprobs and greedy tokens, checking their order."""
    entries = [[] for _ in prompts]
    tokens = [[] for _ in prompts]
    for i, prompt in enumerate(prompts):
        engine.add_request(i, prompt, max_tokens=6, temperature=0, **options)
    while engine.has_unfinished():
        for output in engine.step():
            request = output["request"]
            if output["prompt_logprobs"]:
                assert output["token"] is None and not tokens[request], \
                    "prompt logprobs after a sampled token"
            entries[request] += output["prompt_logprobs"]
            if output["token"] is not None:
                tokens[request].append(output["token"])
    return entries, tokens


def test_a_prompts_logprobs_are_onnxruntimes(artifact, prompts):
    prompt = prompts[0]
    with Model(artifact, num_kv_blocks=64) as model, Engine(model) as engine:
        (entries,), _ = run(engine, [prompt], prompt_logprobs=TOP)
    reference = ort_log_softmax(prompt)
    assert len(entries) == len(prompt) - 1
    for position, entry in enumerate(entries):
        row = reference[position]
        token = prompt[position + 1]
        assert entry["token"] == token
        assert entry["logprob"] == pytest.approx(row[token], abs=LOGPROB_TOLERANCE)
        # Tokens within the tolerance of it may rank either side.
        surely_above = (row > row[token] + LOGPROB_TOLERANCE).sum()
        maybe_above = (row > row[token] - LOGPROB_TOLERANCE).sum() - 1
        assert 1 + surely_above <= entry["rank"] <= 1 + maybe_above
        top_tokens = [t for t, _ in entry["top_logprobs"]]
        assert top_tokens == list(np.argsort(-row, kind="stable")[:TOP])
        for top_token, logprob in entry["top_logprobs"]:
            assert logprob == pytest.approx(row[top_token], abs=LOGPROB_TOLERANCE)


def test_under_small_steps_and_preemption_each_entry_comes_once_as_alone(artifact, prompts):
    with Model(artifact, num_kv_blocks=64) as model, Engine(model) as engine:
        alone = [run(engine, [prompt], prompt_logprobs=TOP)[0][0] for prompt in prompts]
        _, greedy = run(engine, prompts)
    # 5 blocks of 16 positions: the four sequences cannot all fit.
    with Model(artifact, num_kv_blocks=5) as model, Engine(model) as engine:
        entries, tokens = run(engine, prompts, prompt_logprobs=TOP)
        stats = engine.stats()
    # The 78 prompt rows need 10 steps of 8 rows at least.
    assert stats["num_steps"] >= -(-sum(len(p) for p in prompts) // STEP_ROWS)
    assert stats["num_preemptions"] > 0
    assert stats["num_kv_blocks_held"] == 0
    assert entries == alone
    assert tokens == greedy


def test_a_cached_prefix_is_computed_again_for_its_rows(artifact, prompts):
    prompt = prompts[0]
    with Model(artifact, num_kv_blocks=64) as model, Engine(model) as engine:
        run(engine, [prompt])
        (entries,), _ = run(engine, [prompt], prompt_logprobs=0)
        assert len(entries) == len(prompt) - 1
        assert engine.stats()["cached_prompt_tokens"] == 0
        run(engine, [prompt])
        assert engine.stats()["cached_prompt_tokens"] == 32  # two full blocks of 16
