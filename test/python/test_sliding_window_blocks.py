"""KV blocks out of every layer's sliding window are given back.

optimum's export of a Mistral whose every layer has a sliding window of 20 keys
(test/exporters/optimum/mistral-window): llmc proves the window from the file's mask, the
manifest says `attention_window: 20`, and the engine gives a sequence's blocks back as they
fall out of the window (they stay in the prefix cache until evicted). So:

  * a cache of 6 blocks of 16 (96 positions) serves sequences of up to the model's 256
    positions: the default max_model_len is the model's, not the cache's;
  * the greedy tokens of prompts that run together in that cache, past 96 positions, with
    preemptions, equal onnxruntime's on the same file, and those of a cache that holds
    every block (bit-identical logits: the steps read the same keys);
  * a hybrid model (optimum's Gemma-2: a window of 16 keys on layer 0, none on layer 1) is
    compiled with two KV cache groups (`step.kv_groups`), each with its own block table: a
    block holds one layer's rows, the local layer's table gives its blocks back as they fall
    out of its window and the global layer's keeps them. So a cache of 20 one-layer blocks
    serves the model's 256 positions where one table for both layers would hold 160, the
    blocks held at the end of a long sequence are the global layer's and the window's, and
    the greedy tokens equal onnxruntime's and those of a cache that never runs short.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from llmc.engine import Engine
from llmc.runtime import Model
from llmc.testing.ort_reference import greedy
from test_exporters import EXPORTS_DIR
from test_quantized_cpu import compile_model, ragged_steps

EXPORT = EXPORTS_DIR / "optimum/mistral-window/model.onnx"
WINDOW = 20
SMALL_CACHE_BLOCKS = 6
MAX_NUM_BATCHED_TOKENS = 32
PROMPT_LENGTHS = (30, 45, 12)
MAX_TOKENS = 150


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    return compile_model(EXPORT, tmp_path_factory.mktemp("window") / "model.llmc")


@pytest.fixture(scope="module")
def prompts():
    rng = np.random.default_rng(7)
    return [rng.integers(3, 512, size=length).tolist() for length in PROMPT_LENGTHS]


def attention_window(artifact) -> int:
    return json.loads((artifact / "manifest.json").read_text())["model"]["attention_window"]


def generate(artifact, prompts, num_kv_blocks, **engine_config):
    """Greedy tokens of the prompts run together, and the engine's counters."""
    with Model(artifact, num_kv_blocks=num_kv_blocks) as model, \
            Engine(model, max_num_batched_tokens=MAX_NUM_BATCHED_TOKENS, **engine_config) as engine:
        tokens = engine.generate(prompts, max_tokens=MAX_TOKENS, temperature=0)
        return [samples[0] for samples in tokens], engine.stats()


def test_the_manifest_says_the_window(artifact):
    assert attention_window(artifact) == WINDOW


def test_a_small_cache_serves_the_models_length(artifact):
    with Model(artifact, num_kv_blocks=SMALL_CACHE_BLOCKS) as model:
        with Engine(model, max_num_batched_tokens=MAX_NUM_BATCHED_TOKENS) as engine:
            assert engine.max_model_len == 256
        # Without room for a window and a step's chunk, the cache bounds it again.
        with Engine(model, max_num_batched_tokens=128) as engine:
            assert engine.max_model_len == SMALL_CACHE_BLOCKS * 16


def test_greedy_tokens_past_the_cache_match_onnxruntime(artifact, prompts):
    ours, stats = generate(artifact, prompts, SMALL_CACHE_BLOCKS)
    assert all(len(tokens) == MAX_TOKENS for tokens in ours)
    assert max(PROMPT_LENGTHS) + MAX_TOKENS > SMALL_CACHE_BLOCKS * 16
    assert stats["num_preemptions"] > 0  # three sequences' windows do not fit six blocks
    assert stats["num_kv_blocks_held"] == 0
    whole, whole_stats = generate(artifact, prompts, 64)
    assert whole_stats["num_preemptions"] == 0
    assert ours == whole
    assert ours == greedy(EXPORT, prompts, MAX_TOKENS)


GEMMA2 = EXPORTS_DIR / "optimum/gemma2/model.onnx"
GEMMA2_WINDOW = 16


@pytest.fixture(scope="module")
def hybrid(tmp_path_factory):
    return compile_model(GEMMA2, tmp_path_factory.mktemp("hybrid") / "gemma2.llmc")


def test_a_hybrid_model_has_a_group_per_window(hybrid):
    manifest = json.loads((hybrid / "manifest.json").read_text())
    assert manifest["model"]["attention_window"] == 0  # the global layer sees every key
    assert manifest["step"]["kv_groups"] == [{"window": 0, "layers": [1]},
                                             {"window": GEMMA2_WINDOW, "layers": [0]}]
    with Model(hybrid, num_kv_blocks=20) as model:
        assert model.num_kv_groups == 2
        # A block holds one layer's rows: 20 of them hold what 10 two-layer blocks would,
        # 160 positions in one table; the local layer needs only its window's.
        with Engine(model, max_num_batched_tokens=MAX_NUM_BATCHED_TOKENS) as engine:
            assert engine.max_model_len == 256


def test_a_hybrid_model_gives_back_its_local_blocks(hybrid):
    prompt = np.random.default_rng(11).integers(3, 512, size=40).tolist()
    steps = 200
    with Model(hybrid, num_kv_blocks=64) as model, \
            Engine(model, max_num_batched_tokens=MAX_NUM_BATCHED_TOKENS) as engine:
        engine.add_request(0, prompt, max_tokens=steps, temperature=0)
        held = []
        while engine.has_unfinished():
            engine.step()
            held.append(engine.stats()["num_kv_blocks_held"])
        # The last step's tokens: the global layer holds every block, the local one at most
        # its window's, the block its window starts in and the next token's.
        length = len(prompt) + steps - 1
        assert held[-2] <= -(-length // 16) + -(-GEMMA2_WINDOW // 16) + 1
        assert held[-2] < 2 * (length // 16)
        assert held[-1] == 0


@pytest.mark.parametrize("swap_space", [0, 1.0])
def test_a_hybrid_models_greedy_tokens_match_onnxruntime(hybrid, prompts, swap_space):
    # Preempted sequences are recomputed, or swapped out and back in group by group.
    ours, stats = generate(hybrid, prompts, 20, swap_space=swap_space)
    assert stats["num_preemptions"] > 0  # three sequences' tables do not fit 20 blocks
    assert (stats["num_swap_preemptions"] > 0) == (swap_space > 0), stats
    assert stats["num_kv_blocks_held"] == 0
    whole, whole_stats = generate(hybrid, prompts, 256)
    assert whole_stats["num_preemptions"] == 0
    assert ours == whole
    assert ours == greedy(GEMMA2, prompts, MAX_TOKENS)


def test_a_hybrid_models_cached_prefix_takes_only_the_local_window(hybrid):
    # 70 tokens: four whole blocks before the last one can come from the cache; the query
    # after them (position 64) sees keys 49 on, so the local layer's group takes block 3 alone.
    prompt = np.random.default_rng(5).integers(3, 512, size=70).tolist()
    with Model(hybrid, num_kv_blocks=64) as model, \
            Engine(model, max_num_batched_tokens=MAX_NUM_BATCHED_TOKENS) as engine:
        first = engine.generate([prompt], max_tokens=24, temperature=0)[0][0]
        second = engine.generate([prompt], max_tokens=24, temperature=0)[0][0]
        stats = engine.stats()
    assert stats["cached_prompt_tokens"] == 64
    assert stats["num_kv_blocks_held"] == 0
    assert first == second == greedy(GEMMA2, [prompt], 24)[0]


def test_groups_compute_what_one_table_computes(hybrid, tmp_path):
    # The same kernels over the group's table rows and slots: bit-identical logits, on a
    # ragged prefill past the window and decode steps (llmc.testing.paged gives each group
    # its own blocks).
    one_table = compile_model(GEMMA2, tmp_path / "one-table.llmc", "--no-kv-cache-groups")
    assert "kv_groups" not in json.loads((one_table / "manifest.json").read_text())["step"]
    with Model(one_table) as model:
        assert model.num_kv_groups == 1
    grouped, single = ragged_steps(hybrid, one_table)
    for ours, theirs in zip(grouped, single):
        np.testing.assert_array_equal(ours, theirs)
