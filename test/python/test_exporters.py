"""The real exporters' files against onnxruntime: every export compiles and matches, or is
refused at compile time with one error. Never a wrong answer.

The exports are test/exporters/<exporter>/<family>/model.onnx, written by the exporters
themselves (scripts/make-exporter-fixtures.sh; test/exporters/README.md). Per export:

  * `llmc compile` succeeds, and then the prefill's and 32 teacher-forced decode steps' logits
    are within a relative error of 1e-4 of onnxruntime's on the same file, and 32 greedy
    tokens per prompt are onnxruntime's; or
  * it fails with exactly one `llmc: error: ...` line and a non-zero exit.

docs/supported-models.md is the table of these outcomes; test_supported_models_table fails
when it differs from what this run found (LLMC_UPDATE_SUPPORTED_MODELS=1 rewrites it).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper
import pytest

from llmc.runtime import Model
from llmc.testing.ort_reference import OrtDecoder
from llmc.testing.paged import PagedRunner

ROOT = Path(__file__).resolve().parents[2]
LLMC = Path(os.environ.get("LLMC_BUILD_DIR", ROOT / "build")) / "bin" / "llmc"
EXPORTS_DIR = ROOT / "test" / "exporters"
TABLE = ROOT / "docs" / "supported-models.md"

# The generating models; the pooling models have their own tests: embedding models
# (optimum-feature-extraction/, no LM head, and optimum-sentence-transformers/, pooled in
# the graph; test_embeddings.py), sequence classifiers (optimum-text-classification/;
# test_classification.py) and cross-encoders (optimum-reranker/; test_scoring.py).
POOLING_EXPORTS = ("optimum-feature-extraction", "optimum-sentence-transformers",
                   "optimum-text-classification", "optimum-reranker")
EXPORTS = sorted(path.parent.relative_to(EXPORTS_DIR)
                 for path in EXPORTS_DIR.glob("*/*/model.onnx")
                 if path.parent.parent.name not in POOLING_EXPORTS)
MAX_REL_ERROR = 1e-4
DECODE_STEPS = 32
GREEDY_STEPS = 32
PROMPT_LENGTHS = (11, 27, 4)
NUM_KV_BLOCKS = 64


@dataclass
class Outcome:
    """What llmc made of one export: `error` is the refusal ('' when it compiled), `problem`
    what differs from onnxruntime ('' when it matches or was refused), `reference` how the
    reference ran when not on the file as it is."""

    error: str = ""
    problem: str = ""
    reference: str = ""

    def cell(self) -> str:
        if self.problem:
            return f"WRONG: {self.problem}"
        if self.error:
            return f"refused: `{self.error}`"
        how = f"; {self.reference}" if self.reference else ""
        return (f"matches onnxruntime (logits {MAX_REL_ERROR:g}, {GREEDY_STEPS} greedy "
                f"tokens{how})")


HALF_TYPES = (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16)


def widen_tensor(tensor: onnx.TensorProto) -> onnx.TensorProto:
    """A half-precision tensor as the f32 tensor of the same values."""
    values = numpy_helper.to_array(tensor).astype(np.float32)
    return numpy_helper.from_array(values, tensor.name)


def widen_half_types(graph: onnx.GraphProto) -> bool:
    """Makes every f16/bf16 of `graph` and its subgraphs (an If's branches) f32 in place
    (types, initializers, Cast targets and tensor attributes); whether there was any."""
    widened = False
    for index, tensor in enumerate(graph.initializer):
        if tensor.data_type in HALF_TYPES:
            graph.initializer[index].CopyFrom(widen_tensor(tensor))
            widened = True
    for value in [*graph.input, *graph.output, *graph.value_info]:
        if value.type.tensor_type.elem_type in HALF_TYPES:
            value.type.tensor_type.elem_type = onnx.TensorProto.FLOAT
            widened = True
    for node in graph.node:
        for attribute in node.attribute:
            if node.op_type == "Cast" and attribute.name == "to" and attribute.i in HALF_TYPES:
                attribute.i = onnx.TensorProto.FLOAT
                widened = True
            elif attribute.type == onnx.AttributeProto.TENSOR and attribute.t.data_type in HALF_TYPES:
                attribute.t.CopyFrom(widen_tensor(attribute.t))
                widened = True
            elif attribute.type == onnx.AttributeProto.GRAPH:
                widened = widen_half_types(attribute.g) or widened
    return widened


def asks_for_int8_activations(onnx_path: Path) -> bool:
    """Whether the file has MatMulNBits and every one asks for accuracy_level 4 (the genai
    builder's int4 models): `llmc compile` then quantizes activations to int8 unless told
    --int8-activations=false, as onnxruntime does unless told accuracy_level 0."""
    graph = onnx.load(str(onnx_path), load_external_data=False).graph
    levels = [next((a.i for a in node.attribute if a.name == "accuracy_level"), 0)
              for node in graph.node if node.op_type == "MatMulNBits"]
    return bool(levels) and all(level == 4 for level in levels)


def exact_args(onnx_path: Path) -> list[str]:
    """The `llmc compile` arguments of the exact product on this file."""
    return ["--int8-activations=false"] if asks_for_int8_activations(onnx_path) else []


def exact_reference(onnx_path: Path, directory: Path) -> tuple[Path, str]:
    """The file onnxruntime runs as the reference, and how it differs from `onnx_path`.

    MatMulNBits' accuracy_level lets onnxruntime quantize the activations to int8 (the genai
    builder's int4 CPU models ask for level 4): a result within that op's latitude, about
    1e-2 off the exact product, and llmc follows it by default. Compared with the exact
    product (exact_args), the reference is the same file with accuracy_level 0, the op's exact
    semantics.

    A half-precision model is computed in f32 by llmc (the onnx-promote-to-f32 pass), so the
    reference is the same file with its f16/bf16 values and types widened to f32: the same
    weights, the arithmetic llmc does."""
    model = onnx.load(str(onnx_path))
    relaxed = [attribute for node in model.graph.node if node.op_type == "MatMulNBits"
               for attribute in node.attribute
               if attribute.name == "accuracy_level" and attribute.i != 0]
    for attribute in relaxed:
        attribute.i = 0
    widened = widen_half_types(model.graph)
    how = [what for what, done in (("MatMulNBits at accuracy_level 0", relaxed),
                                   ("f16 widened to f32", widened)) if done]
    if not how:
        return onnx_path, ""
    exact = directory / "model.onnx"
    directory.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(exact))
    config = onnx_path.parent / "genai_config.json"
    if config.exists():
        shutil.copy(config, directory)
    return exact, ", ".join(how)


def seeded_prompts(vocab_size: int) -> list[list[int]]:
    rng = np.random.default_rng(1234)
    return [rng.integers(3, vocab_size, size=n).tolist() for n in PROMPT_LENGTHS]


def reference_steps(onnx_path: Path, prompts: list[list[int]]) -> list[np.ndarray]:
    """onnxruntime's logits of the prefill (each prompt's last token) and of the greedy decode
    steps after it: [len(prompts), vocab] per step."""
    decoder = OrtDecoder(onnx_path)
    logits, generation = decoder.prefill(prompts)
    steps = [logits[np.arange(len(prompts)), generation.prompts.last_positions()]]
    while len(steps) <= max(DECODE_STEPS, GREEDY_STEPS):
        steps.append(decoder.decode(generation, steps[-1].argmax(axis=-1)))
    return steps


def compare(model: Model, onnx_path: Path, prompts: list[list[int]] | None = None) -> str:
    """'' if `model` computes what onnxruntime computes on `onnx_path` (for `prompts`, by
    default the seeded ones); else what differs."""
    prompts = prompts or seeded_prompts(model.vocab_size)
    reference = reference_steps(onnx_path, prompts)

    runner = PagedRunner(model)
    for step in range(DECODE_STEPS + 1):
        ours = (runner.prefill(prompts) if step == 0
                else runner.decode(reference[step - 1].argmax(axis=-1)))
        # A NaN would compare as no error at all.
        if not (np.isfinite(ours).all() and np.isfinite(reference[step]).all()):
            return f"logits are not finite at step {step}"
        error = float(np.max(np.abs(ours - reference[step])) / np.abs(reference[step]).max())
        if error >= MAX_REL_ERROR:
            return f"logits differ at step {step}: relative error {error:.3g}"
    runner.release()

    expected = np.stack([step.argmax(axis=-1) for step in reference[:GREEDY_STEPS]], axis=1)
    generated = model.generate(prompts, max_tokens=GREEDY_STEPS)
    for seq, tokens in enumerate(generated):
        if tokens != expected[seq].tolist():
            return f"greedy tokens of prompt {seq} differ"
    return ""


def compare_on_prompts(artifact: Path, onnx_path: Path, lengths: tuple[int, ...], seed: int,
                       num_kv_blocks: int = NUM_KV_BLOCKS) -> str:
    """compare() of `artifact` against `onnx_path` on seeded random prompts of `lengths`."""
    model = Model(artifact, num_kv_blocks=num_kv_blocks)
    try:
        rng = np.random.default_rng(seed)
        prompts = [rng.integers(3, model.vocab_size, size=n).tolist() for n in lengths]
        return compare(model, onnx_path, prompts)
    finally:
        model.close()


@pytest.fixture(scope="session")
def outcomes(tmp_path_factory) -> dict[Path, Outcome]:
    """Every export compiled (and, when it compiles, compared) once per session."""
    directory = tmp_path_factory.mktemp("exporters")
    found: dict[Path, Outcome] = {}
    for export in EXPORTS:
        onnx_path = EXPORTS_DIR / export / "model.onnx"
        artifact = directory / f"{export.parent.name}-{export.name}.llmc"
        result = subprocess.run([str(LLMC), "compile", str(onnx_path), "-o", str(artifact),
                                 "--quiet", *exact_args(onnx_path)],
                                capture_output=True, text=True)
        if result.returncode != 0:
            lines = result.stderr.strip().splitlines()
            message = lines[0] if lines else ""
            # The path in the message is this checkout's: the table keeps the refusal alone.
            message = message.removeprefix("llmc: error: ").removeprefix(f"{onnx_path}: ")
            problem = "" if len(lines) == 1 and lines[0].startswith("llmc: error: ") else (
                f"refused without one error line: {result.stderr!r}")
            found[export] = Outcome(error=message, problem=problem)
            continue
        reference, how = exact_reference(onnx_path, directory / f"{artifact.name}-reference")
        model = Model(artifact, num_kv_blocks=NUM_KV_BLOCKS)
        try:
            found[export] = Outcome(problem=compare(model, reference), reference=how)
        finally:
            model.close()
    return found


@pytest.mark.parametrize("export", EXPORTS, ids=[str(e) for e in EXPORTS])
def test_export_matches_or_is_refused(outcomes, export):
    outcome = outcomes[export]
    assert not outcome.problem, f"{export}: {outcome.problem}"


def supported_models_table(outcomes: dict[Path, Outcome]) -> str:
    lines = ["# Supported models", "",
             "What `llmc compile` does with each decoder family as each exporter writes it: tiny",
             "models with seeded random weights built from the family's transformers config and",
             "exported by the exporter itself (test/exporters/README.md). Each cell is either",
             f"\"matches onnxruntime\" (the same file in onnxruntime: logits within a relative error",
             f"of {MAX_REL_ERROR:g} over a prefill and {DECODE_STEPS} decode steps, and "
             f"{GREEDY_STEPS} greedy tokens)",
             "or the exact error `llmc compile` refuses the file with. Where a cell names",
             "MatMulNBits at accuracy_level 0, onnxruntime ran the file with that attribute set",
             "to 0 and llmc compiled it with `--int8-activations=false`: the exported level 4",
             "lets both quantize activations to int8 (llmc does by default), about 1e-2 off the",
             "exact product compared here. Where a cell says f16 widened to f32, onnxruntime",
             "ran the file with its half-precision weights and types made f32: llmc computes a",
             "half-precision model in f32, on the same weights. onnxruntime runs QMoE's 8-bit",
             "experts with f32 activations (ORT_QMOE_CPU_QNBIT_GEMM=fp32, the op's exact product)",
             "where it would quantize them to int8.", "",
             "Generated by test/python/test_exporters.py (LLMC_UPDATE_SUPPORTED_MODELS=1 rewrites",
             "it); the test fails when this file and the outcomes differ.", ""]
    for exporter in sorted({export.parent for export in outcomes}):
        lines += [f"## {exporter}", "", "| family | llmc compile |", "| --- | --- |"]
        for export, outcome in sorted(outcomes.items()):
            if export.parent == exporter:
                lines.append(f"| {export.name} | {outcome.cell()} |")
        lines.append("")
    return "\n".join(lines)


def test_supported_models_table(outcomes):
    """docs/supported-models.md says what this run found."""
    table = supported_models_table(outcomes)
    if os.environ.get("LLMC_UPDATE_SUPPORTED_MODELS"):
        TABLE.write_text(table)
    assert TABLE.exists() and TABLE.read_text() == table, (
        "docs/supported-models.md differs from the outcomes: rerun with "
        "LLMC_UPDATE_SUPPORTED_MODELS=1 and commit it")


def test_generation_config_ends_generation(tmp_path):
    """The artifact carries generation_config.json, and generation ends at any of its
    eos_token_id (a list, as Llama-3 writes it) as well as at the tokenizer's eos."""
    export = tmp_path / "export"
    shutil.copytree(EXPORTS_DIR / "optimum" / "llama-gqa", export)

    def run() -> list[int]:
        artifact = tmp_path / "model.llmc"
        subprocess.run([str(LLMC), "compile", str(export / "model.onnx"), "-o", str(artifact),
                        "--quiet"], check=True)
        result = subprocess.run([str(LLMC), "run", str(artifact), "--prompt", "Hello world",
                                 "--max-tokens", "8", "--print-ids"],
                                capture_output=True, text=True, check=True)
        return [int(token) for token in result.stdout.split()]

    (export / "generation_config.json").unlink()
    free = run()
    assert len(free) == 8
    # The last token that is new where it is generated: generation must stop right there.
    stop_at = max(i for i in range(1, len(free)) if free[i] not in free[:i])
    stop = free[stop_at]
    other = next(token for token in range(3, 512) if token not in free)
    (export / "generation_config.json").write_text('{"eos_token_id": [%d, %d]}' % (other, stop))
    assert run() == free[:stop_at + 1]


@pytest.mark.parametrize("export, max_positions", [("optimum/phi3-longrope", 64),
                                                   ("genai-fp32/phi3-longrope", 64),
                                                   ("dynamo-opset18/phi3-longrope", 64),
                                                   ("optimum/qwen2-yarn", 256)])
def test_rope_scaling_bounds_the_positions(tmp_path, export, max_positions):
    """LongRoPE's short factors hold up to original_max_position_embeddings (64 here): the
    artifact stops there, and the engine refuses a prompt that reaches it. optimum's export
    traced the short factors alone; the genai builder's and torch.onnx's switch to their
    long factors past 64, and take their short ones without --max-model-len (the dynamo
    export's config.json, transformers 5's rope_parameters, says 64 too; the switch alone
    bounds it without the file, see the lit test of onnx-select-rope-tables). YaRN's
    frequencies hold to max_position_embeddings."""
    artifact = tmp_path / "model.llmc"
    subprocess.run([str(LLMC), "compile", str(EXPORTS_DIR / export / "model.onnx"),
                    "-o", str(artifact), "--quiet"], check=True)
    manifest = json.loads((artifact / "manifest.json").read_text())
    assert manifest["model"]["max_positions"] == max_positions
    too_long = ",".join(["5"] * max_positions)
    result = subprocess.run([str(LLMC), "run", str(artifact), "--prompt-ids", too_long,
                             "--max-tokens", "1"], capture_output=True, text=True)
    assert result.returncode != 0
    assert f"max_model_len is {max_positions}" in result.stderr, result.stderr


# Each longer than the LongRoPE exports' original_max_position_embeddings (64).
LONG_PROMPT_LENGTHS = (70, 90, 65)


@pytest.mark.parametrize("exporter, reference_exporter",
                         [("genai-fp32", "genai-fp32"), ("genai-fp16", "genai-fp16"),
                          ("genai-int4", "genai-int4"), ("dynamo-opset18", "dynamo-opset18"),
                          ("optimum", "genai-fp32")])
def test_longrope_past_the_switch(tmp_path, exporter, reference_exporter):
    """The genai builder's LongRoPE rotates a run longer than 64 tokens with its long tables,
    torch.onnx's with its long inverse frequencies, at every position. Compiled with
    --max-model-len past 64, the artifact takes the long factors at every length (as vLLM
    and llama.cpp do): prompts longer than 64 compute what onnxruntime computes on the same
    file, over the prefill, 32 decode steps and 32 greedy tokens. optimum's export traced
    the short factors alone; llmc rescales its inverse frequencies to config.json's long
    factors, and its reference is the genai builder's export of the same weights, which
    onnxruntime runs with the long ones (onnxruntime on optimum's file would keep the short
    ones past 64)."""
    onnx_path = EXPORTS_DIR / exporter / "phi3-longrope" / "model.onnx"
    artifact = tmp_path / "model.llmc"
    subprocess.run([str(LLMC), "compile", str(onnx_path), "-o", str(artifact), "--quiet",
                    "--max-model-len", "200", *exact_args(onnx_path)], check=True)
    manifest = json.loads((artifact / "manifest.json").read_text())
    assert manifest["model"]["max_positions"] == 200
    reference_path = EXPORTS_DIR / reference_exporter / "phi3-longrope" / "model.onnx"
    reference, _ = exact_reference(reference_path, tmp_path / "reference")
    assert compare_on_prompts(artifact, reference, LONG_PROMPT_LENGTHS, seed=1234) == ""


# Past 64 keys a decode row's keys are cut into several ranges (split-KV).
KEY_RANGES_PROMPT_LENGTHS = (150, 97, 180)


@pytest.mark.parametrize("cache", ["latent", "expanded"])
def test_latent_attention_over_key_ranges(tmp_path, cache):
    """DeepSeek-V3's multi-head latent attention (8 heads over a latent of 64 and a shared
    rotary key of 8) over contexts past 64 keys, where each decode row's keys are split into
    ranges: caching the latent and the rotary key as one KV head of 72 features, one row a
    token whose first 64 are the values (the default), or, with --no-latent-kv-cache, every
    head's keys (24) and values as the export computes them, the artifact computes what
    onnxruntime computes, over the prefill, 32 decode steps and 32 greedy tokens."""
    onnx_path = EXPORTS_DIR / "optimum" / "deepseek-v3-yarn" / "model.onnx"
    artifact = tmp_path / "model.llmc"
    flags = [] if cache == "latent" else ["--no-latent-kv-cache"]
    subprocess.run([str(LLMC), "compile", str(onnx_path), "-o", str(artifact), "--quiet",
                    *flags], check=True)
    manifest = json.loads((artifact / "manifest.json").read_text())
    model, step = manifest["model"], manifest["step"]
    assert (model["num_kv_heads"], model["head_dim"], step["kv_rows"]) == (
        (1, 72, 1) if cache == "latent" else (8, 24, 2))
    reference, _ = exact_reference(onnx_path, tmp_path / "reference")
    assert compare_on_prompts(artifact, reference, KEY_RANGES_PROMPT_LENGTHS, seed=1234) == ""


@pytest.mark.parametrize("export", ["optimum/bloom", "optimum/mpt", "optimum/gpt-neo",
                                    "dynamo-opset18/bloom"])
def test_linear_biases_and_windows_over_key_ranges(tmp_path, export):
    """ALiBi (BLOOM's, MPT's) and GPT-Neo's local window of 16 over contexts past 64 keys,
    where each decode row's keys are split into ranges and each range biases or skips its
    keys alone: what onnxruntime computes, over the prefill, 32 decode steps and 32 greedy
    tokens."""
    onnx_path = EXPORTS_DIR / export / "model.onnx"
    artifact = tmp_path / "model.llmc"
    subprocess.run([str(LLMC), "compile", str(onnx_path), "-o", str(artifact), "--quiet"],
                   check=True)
    assert compare_on_prompts(artifact, onnx_path, KEY_RANGES_PROMPT_LENGTHS, seed=7,
                              num_kv_blocks=4 * NUM_KV_BLOCKS) == ""


def with_group_query_attention_sinks(source: Path, out: Path, mode: str) -> Path:
    """The genai builder's export at `source` with attention sinks on every
    GroupQueryAttention, as the builder writes gpt-oss's (its own gpt-oss export stops at
    an assertion of its YaRN code for the fixtures' head size): a seeded head_sink logit
    per query head ("head_sink"), or smooth_softmax=1, a sink of 0 ("smooth_softmax")."""
    model = onnx.load(str(source / "model.onnx"))
    rng = np.random.default_rng(5)
    for node in model.graph.node:
        if node.op_type != "GroupQueryAttention":
            continue
        if mode == "smooth_softmax":
            node.attribute.append(onnx.helper.make_attribute("smooth_softmax", 1))
            continue
        heads = next(attribute.i for attribute in node.attribute if attribute.name == "num_heads")
        sinks = numpy_helper.from_array(rng.normal(0.0, 1.0, heads).astype(np.float32),
                                        f"{node.name}/head_sink")
        model.graph.initializer.append(sinks)
        node.input.extend([""] * (12 - len(node.input)))
        node.input[11] = sinks.name  # GroupQueryAttention's head_sink
    out.mkdir()
    onnx.save(model, str(out / "model.onnx"), save_as_external_data=True,
              location="model.onnx.data")
    for file in source.iterdir():
        if file.name not in ("model.onnx", "model.onnx.data"):
            shutil.copy(file, out / file.name)
    return out / "model.onnx"


@pytest.mark.parametrize("mode", ["head_sink", "smooth_softmax"])
def test_group_query_attention_sinks(tmp_path, mode):
    """GroupQueryAttention's attention sinks (head_sink, smooth_softmax) compute what
    onnxruntime computes on the same file. They change onnxruntime's logits on this model by
    a third (relative to their largest), so a sink left out or misplaced fails."""
    onnx_path = with_group_query_attention_sinks(EXPORTS_DIR / "genai-fp32" / "llama-gqa",
                                                 tmp_path / "export", mode)
    artifact = tmp_path / "model.llmc"
    subprocess.run([str(LLMC), "compile", str(onnx_path), "-o", str(artifact), "--quiet"],
                   check=True)
    model = Model(artifact, num_kv_blocks=NUM_KV_BLOCKS)
    try:
        assert compare(model, onnx_path) == ""
    finally:
        model.close()


@pytest.mark.parametrize("config_change", ["no long_factor", "mscales differ"])
def test_compile_refuses_a_max_model_len_past_the_export(tmp_path, config_change):
    """optimum's LongRoPE export holds its short factors alone, 64 positions. Without
    config.json's long factors, or with a config that scales short and long attention
    differently (which the traced file cannot follow), a longer --max-model-len is one
    error, not long factors the model does not define."""
    export = tmp_path / "phi3-longrope"
    shutil.copytree(EXPORTS_DIR / "optimum" / "phi3-longrope", export)
    config = json.loads((export / "config.json").read_text())
    if config_change == "no long_factor":
        del config["rope_scaling"]["long_factor"]
    else:
        config["rope_scaling"].update(short_mscale=1.0, long_mscale=1.2)
    (export / "config.json").write_text(json.dumps(config))
    result = subprocess.run([str(LLMC), "compile", str(export / "model.onnx"),
                             "-o", str(tmp_path / "model.llmc"), "--quiet",
                             "--max-model-len", "65"], capture_output=True, text=True)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("llmc: error: "), result.stderr
    assert "--max-model-len 65 is more than the 64 positions the model holds" in lines[0]
