"""The compiled CPU step against onnxruntime, on every fixture and the default model.

Each model is compiled once per session with `llmc compile` and run through the C runtime
(llmc.runtime.Model): by the Python paged driver (llmc.testing.paged.PagedRunner), which runs
Model.step directly, and by the C++ greedy loop (Model.generate). Checked per model:

  * the logits of the prefill and of 32 decode steps, each decode step fed the reference's
    greedy token so that both follow one path, within a relative error of 1e-4
    (max|ours - ref| / max|ref| per step and sequence) of onnxruntime's;
  * 64 greedy tokens per prompt identical to onnxruntime's greedy loop, through both;
  * batch invariance: each of 8 sequences of mixed lengths gives, batched, exactly the tokens
    and the bit-identical logits it gives alone;
and, on one fixture, that bad input to step() is an LlmcRuntimeError, not a crash.

The default model (SmolLM2-135M, converted if absent as in test_raise.py) runs last: it takes
the longest.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from llmc.runtime import LlmcRuntimeError, Model
from llmc.testing.fixtures import FIXTURES, fixture_name, write_fixture
from llmc.testing.ort_reference import OrtDecoder
from llmc.testing.paged import PagedRunner
from llmc.testing.server import DEFAULT_MODEL_DIR, default_model_dir

ROOT = Path(__file__).resolve().parents[2]
LLMC = Path(os.environ.get("LLMC_BUILD_DIR", ROOT / "build")) / "bin" / "llmc"
DEFAULT_MODEL = DEFAULT_MODEL_DIR / "model.onnx"
DEFAULT = "default-smollm2-135m"

MODELS = {fixture_name(*f): f for f in FIXTURES}
MODEL_IDS = [*MODELS, DEFAULT]  # the default model last: the slowest

MAX_REL_ERROR = 1e-4
PARITY_DECODE_STEPS = 32  # decode steps after the prefill in the logits test
GREEDY_STEPS = 64
PROMPT_LENGTHS = (11, 27, 4)  # different lengths; 27 + 64 positions cross several blocks
# Batch invariance: 8 sequences around the block size (16) and up to 40 tokens.
MIXED_LENGTHS = (1, 40, 7, 16, 17, 3, 33, 25)
MIXED_STEPS = 16
NUM_KV_BLOCKS = 256  # 4096 positions: every test here fits, the over-long batch included


def seeded_prompts(vocab_size: int, lengths, seed: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, vocab_size, size=n).tolist() for n in lengths]


class Zoo:
    """The session's models, each written, compiled, opened and run in onnxruntime once."""

    def __init__(self, directory: Path):
        self.directory = directory
        self._onnx: dict[str, Path] = {}
        self._models: dict[str, Model] = {}
        self._references: dict[str, tuple[list[list[int]], list[np.ndarray]]] = {}

    def onnx(self, name: str) -> Path:
        if name not in self._onnx:
            if name == DEFAULT:
                self._onnx[name] = default_model_dir() / DEFAULT_MODEL.name
            else:
                self._onnx[name] = write_fixture(*MODELS[name], self.directory / "onnx")
        return self._onnx[name]

    def model(self, name: str, opt_level: int = 2) -> Model:
        """`name` compiled at -O<opt_level> (the default, 2, is what the parity tests run)."""
        key = name if opt_level == 2 else f"{name}-O{opt_level}"
        if key not in self._models:
            artifact = self.directory / "artifacts" / f"{key}.llmc"
            result = subprocess.run([str(LLMC), "compile", str(self.onnx(name)), "-o",
                                     str(artifact), f"-O{opt_level}", "--quiet"],
                                    capture_output=True, text=True)
            assert result.returncode == 0, f"llmc compile {key} failed:\n{result.stderr}"
            self._models[key] = Model(artifact, num_kv_blocks=NUM_KV_BLOCKS)
        return self._models[key]

    def prompts(self, name: str) -> list[list[int]]:
        return seeded_prompts(self.model(name).vocab_size, PROMPT_LENGTHS, seed=1234)

    def reference(self, name: str) -> list[np.ndarray]:
        """onnxruntime's greedy loop over prompts(name): the [N, vocab] logits of each of
        GREEDY_STEPS steps, the prefill's first."""
        if name not in self._references:
            prompts = self.prompts(name)
            decoder = OrtDecoder(self.onnx(name))
            logits, generation = decoder.prefill(prompts)
            steps = [logits[np.arange(len(prompts)), generation.prompts.last_positions()]]
            while len(steps) < GREEDY_STEPS:
                steps.append(decoder.decode(generation, steps[-1].argmax(axis=-1)))
            self._references[name] = steps
        return self._references[name]

    def close(self) -> None:
        for model in self._models.values():
            model.close()


@pytest.fixture(scope="session")
def zoo(tmp_path_factory):
    models = Zoo(tmp_path_factory.mktemp("cpu_parity"))
    yield models
    models.close()


def relative_error(ours: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(ours - ref).max() / np.abs(ref).max())


def first_divergence(ours: list[list[int]], ref_tokens: np.ndarray,
                     ref_logits: list[np.ndarray]) -> str:
    """'' if every sequence's tokens match; else, per differing sequence, its first differing
    step and the reference's top-2 logit margin there."""
    lines = []
    for seq, tokens in enumerate(ours):
        expected = ref_tokens[seq].tolist()
        if tokens == expected:
            continue
        step = next((i for i, (a, b) in enumerate(zip(tokens, expected)) if a != b),
                    min(len(tokens), len(expected)))
        if step < len(expected):
            top2 = np.sort(ref_logits[step][seq])[-2:]
            lines.append(f"sequence {seq}: first difference at step {step}: ours "
                         f"{tokens[step] if step < len(tokens) else 'none'}, reference "
                         f"{expected[step]} (reference top-2 margin {top2[1] - top2[0]:.3g})")
        else:
            lines.append(f"sequence {seq}: {len(tokens)} tokens, expected {len(expected)}")
    return "\n".join(lines)


def teacher_forced_errors(model: Model, prompts: list[list[int]],
                          reference: list[np.ndarray]) -> np.ndarray:
    """[steps, sequences] relative errors of the prefill of `prompts` (one ragged step) and of
    PARITY_DECODE_STEPS decode steps fed the reference's greedy tokens."""
    runner = PagedRunner(model)
    errors = []
    for step in range(PARITY_DECODE_STEPS + 1):
        ours = (runner.prefill(prompts) if step == 0
                else runner.decode(reference[step - 1].argmax(axis=-1)))
        errors.append([relative_error(ours[n], reference[step][n]) for n in range(len(prompts))])
    runner.release()
    return np.array(errors)


@pytest.mark.parametrize("name", MODEL_IDS)
def test_logits_match_onnxruntime(zoo, name):
    """Prefill (one ragged step over all prompts) and 32 decode steps, fed the reference's
    greedy tokens, within MAX_REL_ERROR of onnxruntime."""
    prompts = zoo.prompts(name)
    errors = teacher_forced_errors(zoo.model(name), prompts, zoo.reference(name))
    worst_step, worst_seq = np.unravel_index(errors.argmax(), errors.shape)
    assert errors.max() < MAX_REL_ERROR, (
        f"{name}: max relative error {errors.max():.3g} at step {worst_step} "
        f"({'prefill' if worst_step == 0 else 'decode'}), sequence {worst_seq} "
        f"(prompt length {len(prompts[worst_seq])}); prefill error {errors[0].max():.3g}, "
        f"first step over {MAX_REL_ERROR}: {int(np.argmax(errors.max(axis=1) >= MAX_REL_ERROR))}")


@pytest.mark.parametrize("name", MODEL_IDS)
def test_greedy_matches_onnxruntime(zoo, name):
    """64 greedy tokens per prompt, through the C++ loop and the Python driver, are
    onnxruntime's."""
    model, prompts, reference = zoo.model(name), zoo.prompts(name), zoo.reference(name)
    ref_tokens = np.stack([step.argmax(axis=-1) for step in reference], axis=1)
    generated = model.generate(prompts, max_tokens=GREEDY_STEPS)
    stepped, _ = PagedRunner(model).greedy(prompts, GREEDY_STEPS)
    failures = [f"{how}:\n{message}" for how, ours in (("Model.generate", generated),
                                                       ("PagedRunner", stepped))
                if (message := first_divergence(ours, ref_tokens, reference))]
    assert not failures, f"{name}: greedy tokens differ from onnxruntime's\n" + "\n".join(failures)


@pytest.mark.parametrize("name", MODEL_IDS)
def test_batch_invariance(zoo, name):
    """Each of 8 sequences of mixed lengths gives, in one batch, the tokens and bit-identical
    logits it gives alone (PagedRunner), and the same tokens through Model.generate."""
    model = zoo.model(name)
    prompts = seeded_prompts(model.vocab_size, MIXED_LENGTHS, seed=4321)
    batch_tokens, batch_logits = PagedRunner(model).greedy(prompts, MIXED_STEPS)
    generated = model.generate(prompts, max_tokens=MIXED_STEPS)
    problems = []
    for seq, prompt in enumerate(prompts):
        alone_tokens, alone_logits = PagedRunner(model).greedy([prompt], MIXED_STEPS)
        where = f"sequence {seq} (prompt length {len(prompt)})"
        if batch_tokens[seq] != alone_tokens[0]:
            problems.append(f"{where}: tokens batched {batch_tokens[seq]} != alone "
                            f"{alone_tokens[0]}")
        differing = [step for step in range(MIXED_STEPS)
                     if not np.array_equal(batch_logits[step][seq], alone_logits[step][0])]
        if differing:
            step = differing[0]
            diff = np.abs(batch_logits[step][seq] - alone_logits[step][0]).max()
            problems.append(f"{where}: logits not bit-identical at steps {differing} "
                            f"(step {step}: max |batched - alone| {diff:.3g})")
        alone_generated = model.generate([prompt], max_tokens=MIXED_STEPS)[0]
        if generated[seq] != alone_generated:
            problems.append(f"{where}: Model.generate batched {generated[seq]} != alone "
                            f"{alone_generated}")
    assert not problems, f"{name}: batched differs from alone\n" + "\n".join(problems)


# Every fixture at each other level; the default model at -O0 only (a compile takes a while).
FUSION_LEVEL_CASES = [(name, level) for name in MODELS for level in (0, 1, 3)] + [(DEFAULT, 0)]


@pytest.mark.parametrize("name,opt_level", FUSION_LEVEL_CASES)
def test_fusion_levels_are_bit_identical(zoo, name, opt_level):
    """Every fusion keeps each element's arithmetic, so -O0, -O1 and -O3 give the logits of
    -O2 (which the tests above hold to onnxruntime) bit for bit: a prefill of the prompts,
    then decode steps fed the greedy tokens, with sequences of mixed lengths in one batch."""
    fused, other = zoo.model(name), zoo.model(name, opt_level)
    prompts = seeded_prompts(fused.vocab_size, MIXED_LENGTHS, seed=99)
    fused_tokens, fused_logits = PagedRunner(fused).greedy(prompts, 8)
    other_tokens, other_logits = PagedRunner(other).greedy(prompts, 8)
    differing = [step for step, (a, b) in enumerate(zip(fused_logits, other_logits))
                 if not np.array_equal(a, b)]
    assert not differing, (
        f"{name}: -O{opt_level} logits differ from -O2 at steps {differing}; max difference "
        f"{np.abs(fused_logits[differing[0]] - other_logits[differing[0]]).max():.3g}")
    assert fused_tokens == other_tokens


def test_positions_outside_a_cached_rope_table_are_an_error(zoo):
    """A model whose rope reads cos/sin tables refuses positions past their rows."""
    model = zoo.model("optimum-mha-rope_style_cache")
    step = dict(tokens=[1], cu_seqlens_q=[0, 1], context_lens=[1], block_tables=[[0]],
                slot_mapping=[0], logits_indices=[0])
    for position in (2048, 100000000, -1):
        with pytest.raises(LlmcRuntimeError, match="positions"):
            model.step(positions=[position], **step)
    model.step(positions=[2047], **step)


def test_bad_step_input_is_an_error(zoo):
    """Bad step() and step_greedy() arguments are LlmcRuntimeErrors, and the model still runs
    afterwards."""
    name = "optimum-gqa"
    model = zoo.model(name)
    vocab, block_size = model.vocab_size, model.block_size

    def one_sequence(tokens, blocks=(0,)):
        count = len(tokens)
        return dict(tokens=tokens, positions=list(range(count)), cu_seqlens_q=[0, count],
                    context_lens=[count], block_tables=[list(blocks)],
                    slot_mapping=[blocks[p // block_size] * block_size + p % block_size
                                  for p in range(count)],
                    logits_indices=[count - 1])

    with pytest.raises(LlmcRuntimeError, match="outside the vocabulary"):
        model.step(**one_sequence([1, vocab, 2]))
    with pytest.raises(LlmcRuntimeError, match="outside the vocabulary"):
        model.step(**one_sequence([-1]))
    too_many = model.max_num_batched_tokens + 1
    blocks = list(range(-(-too_many // block_size)))
    assert len(blocks) <= model.num_kv_blocks
    with pytest.raises(LlmcRuntimeError, match="max_num_batched_tokens"):
        model.step(**one_sequence([1] * too_many, blocks))
    bad_block = dict(one_sequence([1, 2]), block_tables=[[model.num_kv_blocks]])
    with pytest.raises(LlmcRuntimeError, match="not a block of the KV cache"):
        model.step(**bad_block)
    with pytest.raises(LlmcRuntimeError, match="not a block of the KV cache"):
        model.step(**dict(one_sequence([1, 2]), block_tables=[[-1]]))
    with pytest.raises(LlmcRuntimeError, match="is negative"):
        model.step(**dict(one_sequence([1, 2]), positions=[0, -100000000]))

    with pytest.raises(LlmcRuntimeError, match="outside the vocabulary"):
        model.step_greedy(**one_sequence([1, vocab, 2]))

    # Still usable: the same prompt gives onnxruntime's prefill logits, and step_greedy (on the
    # CPU, from the same logits) their argmax.
    prompt = zoo.prompts(name)[0]
    logits = model.step(**one_sequence(prompt))
    ref_logits, generation = OrtDecoder(zoo.onnx(name)).prefill([prompt])
    assert relative_error(logits[0], ref_logits[0, -1]) < MAX_REL_ERROR
    assert not model.greedy_on_device
    assert model.step_greedy(**one_sequence(prompt)).tolist() == [int(logits[0].argmax())]
