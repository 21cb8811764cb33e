"""A benchmark-sized Gemma-3 with seeded random weights, exported by optimum-onnx.

    .venv-optimum/bin/python bench/hybrid_model.py OUT_DIR

writes OUT_DIR/hf (the transformers model) and OUT_DIR/onnx (optimum's export) for
bench/kv_cache_groups.py. Nothing is downloaded; run `bash scripts/setup.sh exporters` once
for the venv.

Gemma-3-1B's shape at half its width and depth: 12 layers of hidden 512 (MLP 2,048), 4 query
heads and one KV head of 128, five local layers (a sliding window of 512 keys, Gemma-3-1B's)
to every global one (layers 5 and 11), 8,192 positions: 48M parameters, 191 MB of f32
weights, so that decode steps read mostly weights and batching pays, and the layout whose
local layers need only their window's KV blocks.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import torch
import transformers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    torch.manual_seed(0)
    config = transformers.Gemma3TextConfig(
        vocab_size=4096, hidden_size=512, intermediate_size=2048, num_hidden_layers=12,
        num_attention_heads=4, num_key_value_heads=1, head_dim=128, sliding_window=512,
        query_pre_attn_scalar=128, max_position_embeddings=8192)
    model = transformers.Gemma3ForCausalLM(config).eval()
    hf = args.out / "hf"
    model.save_pretrained(hf)
    model.generation_config.save_pretrained(hf)
    optimum_cli = Path(sys.executable).with_name("optimum-cli")
    subprocess.run([str(optimum_cli), "export", "onnx", "--model", str(hf), "--task",
                    "text-generation-with-past", str(args.out / "onnx")], check=True)


if __name__ == "__main__":
    main()
