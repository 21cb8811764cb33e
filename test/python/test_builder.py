"""The Llama fixture builder: every fixture is valid ONNX and onnxruntime computes the numpy
reference's logits through prefill, cached decode and padded batches."""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import pytest

from llmc.testing.builder import build_model, effective_weights
from llmc.testing.fixtures import FIXTURES, SMALL_VARIANTS, VARIANTS, fixture_name, write_fixture
from llmc.testing.genai import register_onnx_schemas
from llmc.testing.llama import LlamaConfig, random_weights, reference_forward
from llmc.testing.ort_reference import OrtDecoder, greedy, prefill_and_decode
from llmc.testing.quant import quantize_int4

PROMPT = [7, 101, 33, 250, 12, 480, 9]
SHORT_PROMPT = [300, 41, 5]
DECODE_STEPS = 3
# Logit errors are judged relative to the largest logit (fp32 with other summation orders).
RELATIVE_TOLERANCE = 1e-4

register_onnx_schemas()


def assert_logits_close(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.shape == expected.shape
    scale = max(1.0, float(np.abs(expected).max()))
    error = float(np.abs(actual - expected).max())
    assert error <= RELATIVE_TOLERANCE * scale, \
        f"max abs error {error:.3g} over logits of magnitude {scale:.3g}"


@dataclass
class Fixture:
    options: dict
    path: Path
    config: LlamaConfig
    weights: dict[str, np.ndarray]  # what the model computes with (dequantized for int4)
    decoder: OrtDecoder


@pytest.fixture(scope="module", params=FIXTURES, ids=lambda entry: fixture_name(*entry))
def fixture(request, tmp_path_factory) -> Fixture:
    style, variant, options = request.param
    path = write_fixture(style, variant, options, tmp_path_factory.mktemp("fixtures"))
    build_options = {k: v for k, v in options.items() if k != "external_data"}
    config = VARIANTS[variant]
    weights = effective_weights(config, style, seed=0, **build_options)
    return Fixture(options, path, config, weights, OrtDecoder(path))


def test_fixture_is_valid_onnx(fixture: Fixture):
    onnx.checker.check_model(str(fixture.path), full_check=True)
    if fixture.options.get("external_data"):
        assert (fixture.path.parent / "model.onnx_data").is_file()
        assert fixture.path.stat().st_size < 100_000


def test_prefill_and_decode_match_reference(fixture: Fixture):
    c, w, decoder = fixture.config, fixture.weights, fixture.decoder
    logits, generation = decoder.prefill([PROMPT])
    expected, past = reference_forward(c, w, np.array([PROMPT]))
    assert_logits_close(logits, expected)
    for step in range(DECODE_STEPS):
        token = int(expected[0, -1].argmax())
        logits = decoder.decode(generation, [token])
        mask = np.ones((1, len(PROMPT) + step + 1), dtype=np.int64)
        expected, past = reference_forward(c, w, np.array([[token]]), mask, past=past)
        assert_logits_close(logits, expected[:, -1])
    # The cache holds rope-rotated keys and plain values, layer by layer.
    for i, (key, value) in enumerate(past):
        np.testing.assert_allclose(generation.past[f"past_key_values.{i}.key"], key, atol=1e-4)
        np.testing.assert_allclose(generation.past[f"past_key_values.{i}.value"], value,
                                   atol=1e-4)


def test_cached_decode_matches_full_forward(fixture: Fixture):
    decoder = fixture.decoder
    logits, generation = decoder.prefill([PROMPT])
    next_logits = logits[0, -1]
    tokens = list(PROMPT)
    for _ in range(DECODE_STEPS):
        tokens.append(int(next_logits.argmax()))
        next_logits = decoder.decode(generation, [tokens[-1]])[0]
    ids = np.array([tokens])
    full, _ = decoder.forward(ids, np.ones_like(ids))
    assert_logits_close(next_logits, full[0, -1])


def test_padded_batch_matches_solo(fixture: Fixture):
    decoder = fixture.decoder
    prompts = [PROMPT, SHORT_PROMPT]
    logits, generation = decoder.prefill(prompts)
    last = generation.prompts.last_positions()
    # Each prompt continues with its own greedy token, then a fixed one.
    continuations = [[int(logits[i, last[i]].argmax()), 11] for i in range(len(prompts))]
    batch_steps = [decoder.decode(generation, [c[step] for c in continuations])
                   for step in range(2)]
    for i, prompt in enumerate(prompts):
        solo, solo_generation = decoder.prefill([prompt])
        assert_logits_close(logits[i, generation.prompts.positions(i)], solo[0])
        for step, token in enumerate(continuations[i]):
            assert_logits_close(batch_steps[step][i],
                                decoder.decode(solo_generation, [token])[0])


def test_greedy_is_argmax_of_step_logits(tmp_path: Path):
    path = write_fixture("optimum", "gqa", {}, tmp_path)
    prompts = [PROMPT, SHORT_PROMPT]
    steps = prefill_and_decode(path, prompts, steps=4)
    assert len(steps) == 4 and steps[0].shape == (2, VARIANTS["gqa"].vocab_size)
    assert greedy(path, prompts, steps=4) == [[int(s[i].argmax()) for s in steps]
                                             for i in range(2)]


@pytest.mark.parametrize("variant", SMALL_VARIANTS)
def test_greedy_decoding_is_well_conditioned(variant: str):
    """Seeded weights make greedy decoding vary and keep top-2 margins far above fp32 noise."""
    c = VARIANTS[variant]
    w = random_weights(c, seed=0)
    logits, past = reference_forward(c, w, np.array([PROMPT]))
    tokens, margins = [], []
    for step in range(8):
        top2 = np.sort(logits[0, -1])[-2:]
        margins.append(top2[1] - top2[0])
        tokens.append(int(logits[0, -1].argmax()))
        mask = np.ones((1, len(PROMPT) + step + 1), dtype=np.int64)
        logits, past = reference_forward(c, w, np.array([tokens[-1:]]), mask, past=past)
    assert len(set(tokens)) >= 4, tokens
    assert min(margins) > 1e-2, margins


def test_reference_cache_equals_full_forward():
    c = VARIANTS["gqa"]
    w = random_weights(c, seed=1)
    ids = np.array([PROMPT])
    full, _ = reference_forward(c, w, ids)
    _, past = reference_forward(c, w, ids[:, :4])
    cached, _ = reference_forward(c, w, ids[:, 4:], np.ones_like(ids), past=past)
    np.testing.assert_allclose(cached, full[:, 4:], atol=1e-4)


# Rounding errs by half a step; a symmetric block also clips the far side of its range, which
# holds 7 steps against 8 on the side of the largest magnitude, by up to one step.
@pytest.mark.parametrize("symmetric, max_steps", [(True, 1.0), (False, 0.5)])
def test_int4_roundtrip_error(symmetric: bool, max_steps: float):
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((24, 344)).astype(np.float32)  # K not a block multiple
    q = quantize_int4(weight, block_size=32, symmetric=symmetric)
    assert q.packed.shape == (24, 11, 16) and q.scales.shape == (24, 11)
    assert (q.zero_points is None) == symmetric
    step = np.repeat(np.abs(q.scales), 32, axis=1)[:, :344]
    assert np.all(np.abs(q.dequantize() - weight) <= max_steps * step + 1e-6)


def test_int4_fixture_weights_are_quantized():
    c = VARIANTS["tied"]
    original = random_weights(c, seed=0)
    used = effective_weights(c, "genai", quant="int4")
    for name in ("model.embed_tokens.weight", "model.layers.0.mlp.down_proj.weight"):
        assert not np.array_equal(used[name], original[name])
    assert np.array_equal(used["model.norm.weight"], original["model.norm.weight"])


def test_bench_variant_has_100m_parameters():
    c = VARIANTS["bench"]
    model = build_model(c, "optimum")
    count = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    assert count == c.num_parameters()
    assert 90e6 < count < 110e6


def test_bad_weights_options_and_opsets_are_rejected():
    c = VARIANTS["mha"]
    weights = random_weights(c)
    weights["model.norm.weight"] = weights["model.norm.weight"][:-1]
    del weights["lm_head.weight"]
    with pytest.raises(ValueError, match="model.norm.weight is float32.*lm_head.weight missing"):
        build_model(c, "optimum", weights=weights)
    with pytest.raises(ValueError, match="unknown option"):
        build_model(c, "optimum", quant="int4")
    with pytest.raises(ValueError, match="opset"):
        build_model(c, "standard", opset=17)
    with pytest.raises(ValueError, match="style"):
        build_model(c, "tflite")


def test_cli_writes_one_model(tmp_path: Path):
    out = tmp_path / "out" / "model.onnx"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2] / "python"))
    result = subprocess.run(
        [sys.executable, "-m", "llmc.testing.build", "--style", "genai", "--variant", "mqa",
         "--option", "quant=int4", "--option", "packed_qkv=true", "--external-data",
         "-o", str(out)],
        capture_output=True, text=True, env=env, check=True)
    assert result.stdout.strip() == str(out)
    assert out.is_file() and (out.parent / "model.onnx_data").is_file()
