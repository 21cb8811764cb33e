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
  * a hybrid model (Gemma-2: a window on every other layer) gives nothing back:
    `attention_window: 0`.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from llmc.engine import Engine
from llmc.runtime import Model
from llmc.testing.ort_reference import greedy
from test_exporters import EXPORTS_DIR
from test_quantized_cpu import compile_model

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


def generate(artifact, prompts, num_kv_blocks):
    """Greedy tokens of the prompts run together, and the engine's counters."""
    with Model(artifact, num_kv_blocks=num_kv_blocks) as model, \
            Engine(model, max_num_batched_tokens=MAX_NUM_BATCHED_TOKENS) as engine:
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


def test_a_hybrid_model_gives_nothing_back(tmp_path):
    gemma2 = compile_model(EXPORTS_DIR / "optimum/gemma2/model.onnx", tmp_path / "gemma2.llmc")
    assert attention_window(gemma2) == 0
