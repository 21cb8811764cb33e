"""The serving engine on a compiled fixture model, through llmc.engine.

The model is the optimum-style GQA fixture, compiled once. Checked:

  * preemption: with a KV cache so small that sequences are preempted many times, recomputed
    or swapped out to host memory and back (--swap-space), every request's greedy tokens
    equal those of a run with a large cache; so too for DeepSeek-V3's latent, cached one row
    a token (step.kv_rows 1);
  * 64 concurrent requests of mixed lengths: each one's greedy tokens equal its solo run's;
  * n=4 parallel sampling holds fewer KV blocks than 4 separate requests (measured at the
    peak), computes the prompt once, and gives the tokens of 4 requests with seeds s..s+3;
  * prefix caching: a second request sharing a 512-token prefix computes only the rest
    (counted in prompt tokens computed) and gives the same tokens as without the cache;
  * speculative decoding by prompt lookup: greedy tokens equal those without it, draft tokens
    are accepted, every block is freed, and seeded samples are reproducible;
  * the priority scheduling policy serves the lowest priority value first;
  * abort frees a request's blocks at once, and a bad request is an error, not a crash.

Greedy tokens of the engine against onnxruntime's are checked in test_cpu_parity.py
(Model.generate runs through the engine).
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from llmc.engine import Engine
from llmc.runtime import LlmcRuntimeError, Model
from llmc.testing.fixtures import write_fixture

ROOT = Path(__file__).resolve().parents[2]
LLMC = Path(os.environ.get("LLMC_BUILD_DIR", ROOT / "build")) / "bin" / "llmc"
FIXTURE = ("optimum", "gqa", {})
BLOCK_SIZE = 16


@pytest.fixture(scope="module")
def artifact(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("engine")
    onnx = write_fixture(*FIXTURE, directory / "onnx")
    artifact = directory / "model.llmc"
    result = subprocess.run([str(LLMC), "compile", str(onnx), "-o", str(artifact), "--quiet"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return artifact


@pytest.fixture(scope="module")
def large(artifact):
    with Model(artifact, num_threads=2, num_kv_blocks=1024) as model:
        yield model


def random_prompts(count: int, lengths: tuple[int, int], seed: int,
                   vocab_size: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, vocab_size, size=int(rng.integers(*lengths, endpoint=True))).tolist()
            for _ in range(count)]


def run(engine: Engine, prompts, **options):
    """Each request's samples' tokens, and the peak of KV blocks held."""
    n = options.get("n", 1)
    tokens = [[[] for _ in range(n)] for _ in prompts]
    for i, prompt in enumerate(prompts):
        engine.add_request(i, prompt, **options)
    peak = 0
    while engine.has_unfinished():
        for output in engine.step():
            tokens[output["request"]][output["index"]].append(output["token"])
        peak = max(peak, engine.stats()["num_kv_blocks_held"])
    return tokens, peak


def test_preemption_gives_the_tokens_of_a_large_cache(artifact, large):
    prompts = random_prompts(12, (8, 60), seed=1, vocab_size=large.vocab_size)
    with Engine(large) as engine:
        expected, _ = run(engine, prompts, max_tokens=40, temperature=0)
    # 12 blocks hold 192 positions; each request grows to up to 100 (7 blocks).
    with Model(artifact, num_threads=2, num_kv_blocks=12) as small, Engine(small) as engine:
        tokens, peak = run(engine, prompts, max_tokens=40, temperature=0)
        stats = engine.stats()
    assert stats["num_preemptions"] >= 10, stats
    assert peak <= 12
    assert stats["num_kv_blocks_held"] == 0
    for i, (ours, reference) in enumerate(zip(tokens, expected)):
        assert ours == reference, f"request {i}"


@pytest.mark.parametrize("swap_space", [0, 1.0])
def test_one_row_latent_cache_under_preemption_gives_the_tokens_of_a_large_cache(
        tmp_path, swap_space):
    """DeepSeek-V3's multi-head latent attention over its latent caches one row a token, the
    values being the keys' first features: its blocks, recomputed or swapped to host memory
    and back, give each request the greedy tokens of a large cache."""
    artifact = tmp_path / "model.llmc"
    onnx = ROOT / "test" / "exporters" / "optimum" / "deepseek-v3" / "model.onnx"
    subprocess.run([str(LLMC), "compile", str(onnx), "-o", str(artifact), "--quiet"],
                   check=True)
    assert json.loads((artifact / "manifest.json").read_text())["step"]["kv_rows"] == 1
    with Model(artifact, num_threads=2, num_kv_blocks=1024) as model, Engine(model) as engine:
        prompts = random_prompts(12, (8, 60), seed=2, vocab_size=model.vocab_size)
        expected, _ = run(engine, prompts, max_tokens=40, temperature=0)
    with Model(artifact, num_threads=2, num_kv_blocks=12) as small, \
            Engine(small, swap_space=swap_space) as engine:
        tokens, peak = run(engine, prompts, max_tokens=40, temperature=0)
        stats = engine.stats()
    assert stats["num_preemptions"] >= 5, stats
    assert (stats["num_swap_preemptions"] > 0) == (swap_space > 0), stats
    assert peak <= 12 and stats["num_kv_blocks_held"] == 0
    for i, (ours, reference) in enumerate(zip(tokens, expected)):
        assert ours == reference, f"request {i}"


@pytest.mark.parametrize("swap_space", [1.0, "one block"])
def test_preemption_by_swap_gives_the_tokens_of_a_large_cache(artifact, large, swap_space):
    """With swap space, a preempted sequence's blocks go to host memory and come back bit
    for bit (swapping a block of this model costs far less than recomputing its 16 tokens);
    a swap space of one block leaves the sequences of more blocks to be recomputed."""
    prompts = random_prompts(12, (8, 60), seed=1, vocab_size=large.vocab_size)
    with Engine(large) as engine:
        expected, _ = run(engine, prompts, max_tokens=40, temperature=0)
    with Model(artifact, num_threads=2, num_kv_blocks=12) as small:
        if swap_space == "one block":
            manifest = json.loads((artifact / "manifest.json").read_text())
            config = manifest["model"]
            block_bytes = (config["num_layers"] * 2 * config["num_kv_heads"] * BLOCK_SIZE *
                           config["head_dim"] * 4)
            swap_space = 1.5 * block_bytes / 2**30
        with Engine(small, swap_space=swap_space) as engine:
            tokens, peak = run(engine, prompts, max_tokens=40, temperature=0)
            stats = engine.stats()
    assert stats["num_preemptions"] >= 10, stats
    assert 0 < stats["num_swap_preemptions"], stats
    if stats["num_swap_slots"] == 1:
        assert stats["num_swap_preemptions"] < stats["num_preemptions"], stats
    assert stats["num_blocks_swapped_in"] == stats["num_blocks_swapped_out"] > 0
    assert stats["num_swap_slots_used"] == 0 and stats["num_kv_blocks_held"] == 0
    assert peak <= 12
    for i, (ours, reference) in enumerate(zip(tokens, expected)):
        assert ours == reference, f"request {i}"


def test_sixty_four_concurrent_requests_each_give_their_solo_tokens(large):
    prompts = random_prompts(64, (1, 80), seed=2, vocab_size=large.vocab_size)
    with Engine(large, max_num_seqs=64) as engine:
        together, _ = run(engine, prompts, max_tokens=12, temperature=0)
        assert engine.stats()["num_preemptions"] == 0
    with Engine(large) as engine:
        for i, prompt in enumerate(prompts):
            solo = engine.generate([prompt], first_id=1000 + i, max_tokens=12, temperature=0)
            assert solo[0] == together[i], f"request {i}"


def test_parallel_samples_share_blocks_and_draw_as_separate_seeds(large):
    prompt = random_prompts(1, (100, 100), seed=3, vocab_size=large.vocab_size)[0]
    sampling = dict(max_tokens=24, temperature=0.8, top_p=0.95)
    with Engine(large) as engine:
        (samples,), peak_shared = run(engine, [prompt], n=4, seed=7, **sampling)
        assert engine.stats()["prompt_tokens_computed"] == len(prompt)
    with Engine(large, enable_prefix_caching=False) as engine:
        for i in range(4):
            engine.add_request(i, prompt, seed=7 + i, **sampling)
        tokens = [[] for _ in range(4)]
        peak_separate = 0
        while engine.has_unfinished():
            for output in engine.step():
                tokens[output["request"]].append(output["token"])
            peak_separate = max(peak_separate, engine.stats()["num_kv_blocks_held"])
        assert engine.stats()["prompt_tokens_computed"] == 4 * len(prompt)
    assert samples == tokens
    assert len({tuple(sample) for sample in samples}) > 1, "the samples should differ"
    # 100 + 24 positions: 8 blocks each; shared, the 6 full prompt blocks are held once.
    assert peak_shared < peak_separate, (peak_shared, peak_separate)


def test_a_shared_prefix_is_computed_once(large):
    rng = np.random.default_rng(4)
    prefix = rng.integers(0, large.vocab_size, size=512).tolist()
    first = prefix + rng.integers(0, large.vocab_size, size=30).tolist()
    second = prefix + rng.integers(0, large.vocab_size, size=21).tolist()
    with Engine(large, enable_prefix_caching=False) as engine:
        expected = engine.generate([second], max_tokens=16, temperature=0)[0]
    with Engine(large) as engine:
        engine.generate([first], max_tokens=16, temperature=0)
        before = engine.stats()["prompt_tokens_computed"]
        tokens = engine.generate([second], first_id=1, max_tokens=16, temperature=0)[0]
        stats = engine.stats()
    assert stats["prompt_tokens_computed"] - before == 21
    assert stats["cached_prompt_tokens"] == 512
    assert tokens == expected


SPECULATIVE = {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 1}


def test_speculative_decoding_keeps_the_greedy_tokens(large):
    # Random prompts, and prompts that repeat a span: the random-weight model's greedy
    # continuations repeat themselves too, so drafts are both accepted and rejected.
    prompts = random_prompts(12, (4, 60), seed=6, vocab_size=large.vocab_size)
    prompts += [prompt * 3 for prompt in random_prompts(4, (5, 12), seed=7,
                                                        vocab_size=large.vocab_size)]
    with Engine(large) as engine:
        expected, _ = run(engine, prompts, max_tokens=40, temperature=0)
    with Engine(large, speculative_config=SPECULATIVE) as engine:
        tokens, _ = run(engine, prompts, max_tokens=40, temperature=0)
        stats = engine.stats()
    assert tokens == expected
    assert 0 < stats["accepted_draft_tokens"] < stats["draft_tokens"], stats
    assert stats["num_kv_blocks_held"] == 0
    # Alone, a request whose drafts are accepted takes fewer steps than tokens.
    with Engine(large, speculative_config=SPECULATIVE) as engine:
        engine.generate([prompts[-1]], max_tokens=40, temperature=0)
        stats = engine.stats()
    assert stats["num_steps"] == 40 - stats["accepted_draft_tokens"], stats
    assert stats["accepted_draft_tokens"] > 0, stats


def test_speculative_decoding_with_seeded_sampling_is_reproducible(large):
    prompts = [prompt * 2 for prompt in random_prompts(6, (5, 20), seed=8,
                                                       vocab_size=large.vocab_size)]
    sampling = dict(max_tokens=24, temperature=0.7, seed=11, n=2, logprobs=1)
    runs = []
    for _ in range(2):
        with Engine(large, speculative_config=SPECULATIVE) as engine:
            runs.append(run(engine, prompts, **sampling)[0])
            assert engine.stats()["draft_tokens"] > 0
            assert engine.stats()["num_kv_blocks_held"] == 0
    assert runs[0] == runs[1]
    assert all(len(sample) == 24 for request in runs[0] for sample in request)


@pytest.mark.parametrize("config, message", [
    ({"method": "eagle"}, 'method "eagle" is not supported'),
    ({"num_speculative_tokens": -1}, "num_speculative_tokens must not be negative"),
    ({"prompt_lookup_min": 0}, "prompt_lookup_min must be at least 1"),
    ({"draft_model": "x"}, 'unknown key "draft_model"'),
])
def test_bad_speculative_configs_are_errors(large, config, message):
    with pytest.raises(LlmcRuntimeError, match=message):
        Engine(large, speculative_config=config)


def test_abort_frees_the_blocks_at_once(large):
    with Engine(large) as engine:
        engine.add_request(5, list(range(1, 70)), max_tokens=100, n=2, temperature=0)
        engine.step()
        engine.step()
        assert engine.stats()["num_kv_blocks_held"] > 0
        outputs = engine.abort(5)
        assert [o["finish_reason"] for o in outputs] == ["abort", "abort"]
        assert engine.stats()["num_kv_blocks_held"] == 0
        assert not engine.has_unfinished()


def test_the_priority_policy_serves_the_lowest_value_first(large):
    """vLLM's scheduling_policy "priority": with room for one sequence a step, requests
    finish in priority order, not arrival order, each with the tokens it has alone."""
    prompts = random_prompts(4, (8, 40), seed=9, vocab_size=large.vocab_size)
    priorities = [3, -2, 7, 0]
    with Engine(large) as engine:
        alone, _ = run(engine, prompts, max_tokens=6, temperature=0)
    with Engine(large, max_num_seqs=1, scheduling_policy="priority") as engine:
        for i, prompt in enumerate(prompts):
            engine.add_request(i, prompt, max_tokens=6, temperature=0, priority=priorities[i])
        finished, tokens = [], [[] for _ in prompts]
        while engine.has_unfinished():
            for output in engine.step():
                tokens[output["request"]].append(output["token"])
                if output["finish_reason"]:
                    finished.append(output["request"])
    assert finished == sorted(range(len(prompts)), key=priorities.__getitem__)
    assert tokens == [samples[0] for samples in alone]
    with pytest.raises(LlmcRuntimeError, match='scheduling_policy must be "fcfs" or "priority"'):
        Engine(large, scheduling_policy="lifo")


@pytest.mark.parametrize("prompt, options, message", [
    ([], {}, "the prompt is empty"),
    ([1], {"priority": 1}, "needs the priority scheduling policy"),
    ([1, 10**6], {}, "outside the vocabulary"),
    ([1], {"max_tokens": 0}, "max_tokens must be at least 1"),
    ([1], {"temperature": -1}, "temperature must be a number >= 0"),
    ([1], {"top_k": "ten"}, "top_k has the wrong type"),
    ([1], {"best_of": 2}, 'unknown key "best_of"'),
])
def test_bad_requests_are_errors(large, prompt, options, message):
    with Engine(large) as engine:
        with pytest.raises(LlmcRuntimeError, match=message):
            engine.add_request(0, prompt, **options)
        assert not engine.has_unfinished()
        engine.add_request(0, [1, 2], max_tokens=2)  # and the engine still serves
        assert engine.generate([[3]], first_id=1, max_tokens=2) is not None


def test_a_prompt_longer_than_the_cache_is_refused(artifact):
    with Model(artifact, num_threads=1, num_kv_blocks=4) as small, Engine(small) as engine:
        with pytest.raises(LlmcRuntimeError, match="max_model_len is 64"):
            engine.add_request(0, [1] * 64)
