"""The KV cache's other types on the CPU (`llmc compile --kv-cache-dtype bf16|int8`).

bf16 stores each cached key and value rounded to bf16 (to nearest even), half the bytes of
f32; attention widens them as it loads them. int8 stores each cached row (one token, one KV
head) as int8 codes and its f32 scale (max|x| / 127); attention applies a key's scale to its
dot product and a value's to its softmax weight. Checked on real exporters' files, against the
same model with the f32 cache:

  * the logits of a ragged batch of prefills and decodes stay within a few percent of the
    f32 cache's, and differ from them (the stored rows are really what attention reads),
    with rotary embeddings fused into the write (Llama, partial rotary Phi-2), a learned
    position embedding and an unfused write (GPT-2), softcapping and a sliding window
    (Gemma 2), quantised weights (genai int4 Qwen3), and multi-head latent attention over
    its cached latent (DeepSeek-V3: one KV head, values narrower than the keys);
  * a prompt's logits alone and in a batch are bit-identical (each row is stored alone);
  * the runtime sizes the cache by bytes, so the same memory holds more blocks: 2x for bf16,
    4 * head_dim / (head_dim + 4) for int8;
  * the compiler refuses a type it does not know and the CUDA target by name.
"""
from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import pytest

from llmc.runtime import Model
from llmc.testing.paged import PagedRunner
from test_exporters import EXPORTS_DIR, LLMC, NUM_KV_BLOCKS, seeded_prompts
from test_quantized_cpu import compile_model, ragged_steps

EXPORTS = ["optimum/llama-gqa", "optimum/phi2", "optimum/gpt2", "optimum/gemma2",
           "genai-int4/qwen3", "optimum/deepseek-v3-yarn"]
DTYPES = ["bf16", "int8"]
MAX_REL_ERROR = 0.05  # keys and values rounded to 8 bits: about 1% on these models


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("export", EXPORTS)
def test_cache_stays_close_to_the_f32_cache(export, dtype, tmp_path):
    onnx_path = EXPORTS_DIR / export / "model.onnx"
    f32 = compile_model(onnx_path, tmp_path / "f32.llmc")
    cached = compile_model(onnx_path, tmp_path / f"{dtype}.llmc", "--kv-cache-dtype", dtype)
    manifest = json.loads((cached / "manifest.json").read_text())
    assert manifest["step"]["kv_dtype"] == dtype
    for step, (ours, reference) in enumerate(zip(*ragged_steps(cached, f32))):
        error = float(np.abs(ours - reference).max() / np.abs(reference).max())
        assert error < MAX_REL_ERROR, f"step {step}: relative error {error:.3g}"
        assert not np.array_equal(ours, reference), f"step {step}: the f32 cache's logits"


@pytest.mark.parametrize("dtype", DTYPES)
def test_cache_does_not_depend_on_the_batch(dtype, tmp_path):
    artifact = compile_model(EXPORTS_DIR / "optimum/llama-gqa/model.onnx",
                             tmp_path / f"{dtype}.llmc", "--kv-cache-dtype", dtype)
    model = Model(artifact, num_kv_blocks=NUM_KV_BLOCKS)
    try:
        prompts = seeded_prompts(model.vocab_size)
        batch = PagedRunner(model)
        together = [batch.prefill(prompts)]
        for _ in range(3):
            together.append(batch.decode(together[-1].argmax(axis=-1)))
        batch.release()
        for seq, prompt in enumerate(prompts):
            alone = PagedRunner(model)
            steps = [alone.prefill([prompt])]
            for logits in together[:-1]:
                steps.append(alone.decode(logits[seq:seq + 1].argmax(axis=-1)))
            alone.release()
            for index, (mine, batched) in enumerate(zip(steps, together)):
                assert np.array_equal(mine[0], batched[seq]), f"prompt {seq}, step {index}"
    finally:
        model.close()


def kv_blocks(artifact, memory: str) -> int:
    result = subprocess.run([str(LLMC), "run", str(artifact), "--prompt-ids", "1,2,3",
                             "--max-tokens", "2", "--kv-cache-memory", memory],
                            capture_output=True, text=True, check=True)
    return int(re.search(r"KV cache: (\d+) blocks", result.stderr).group(1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_same_memory_holds_more_blocks(dtype, tmp_path):
    onnx_path = EXPORTS_DIR / "optimum/llama-gqa/model.onnx"
    f32 = compile_model(onnx_path, tmp_path / "f32.llmc")
    cached = compile_model(onnx_path, tmp_path / f"{dtype}.llmc", "--kv-cache-dtype", dtype)
    head_dim = json.loads((f32 / "manifest.json").read_text())["model"]["head_dim"]
    f32_blocks, blocks = kv_blocks(f32, "4MiB"), kv_blocks(cached, "4MiB")
    # A row is 4 * head_dim bytes in f32, 2 * head_dim in bf16, head_dim codes and a
    # 4-byte scale in int8.
    row_bytes = {"bf16": 2 * head_dim, "int8": head_dim + 4}[dtype]
    assert blocks == (f32_blocks * 4 * head_dim) // row_bytes


@pytest.mark.parametrize("args,message", [
    (["--kv-cache-dtype", "int4"], "unknown --kv-cache-dtype 'int4': use auto, bf16 or int8"),
    (["--kv-cache-dtype", "int8", "--target", "cuda"],
     "--kv-cache-dtype int8 applies to the CPU target; the CUDA target caches K/V in its "
     "--dtype"),
    (["--kv-cache-dtype", "bf16", "--target", "cuda"],
     "--kv-cache-dtype bf16 applies to the CPU target; the CUDA target caches K/V in its "
     "--dtype"),
    (["--kv-cache-dtype", "int8", "--emit", "graph"],
     "--kv-cache-dtype applies to the paged step; --emit=graph has no KV cache")])
def test_kv_cache_dtype_refused_where_it_does_not_apply(args, message, tmp_path):
    result = subprocess.run([str(LLMC), "compile", str(EXPORTS_DIR / "optimum/llama-gqa/model.onnx"),
                             "-o", str(tmp_path / "out.llmc"), *args],
                            capture_output=True, text=True)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [f"llmc: error: {message}"]
