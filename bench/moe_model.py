"""A benchmark-sized Qwen3-MoE with seeded random weights, exported by optimum-onnx.

    .venv-optimum/bin/python bench/moe_model.py OUT_DIR

writes OUT_DIR/hf (the transformers model) and OUT_DIR/onnx (optimum's export, model.onnx
and its external data) for bench/cpu_throughput.py to run through llmc and onnxruntime. The
shape is Qwen3-30B-A3B's in miniature: 8 layers of hidden 512, 8 query and 2 KV heads of
64, and on every layer 32 experts of 256 features, 4 per token (norm_topk_prob): 400 MB of
f32 weights, of which a token reads about an eighth of the experts'. Nothing is downloaded;
run `bash scripts/setup.sh exporters` once for the venv.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import torch
import transformers

CONFIG = dict(vocab_size=8192, hidden_size=512, intermediate_size=1024, num_hidden_layers=8,
              num_attention_heads=8, num_key_value_heads=2, head_dim=64, num_experts=32,
              num_experts_per_tok=4, moe_intermediate_size=256, norm_topk_prob=True,
              max_position_embeddings=4096, initializer_range=0.02, bos_token_id=1,
              eos_token_id=2, pad_token_id=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    hf = args.out / "hf"
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(
        transformers.Qwen3MoeConfig(**CONFIG), dtype=torch.float32).eval()
    model.save_pretrained(hf)
    model.generation_config.save_pretrained(hf)
    print(f"moe_model: wrote {hf}", file=sys.stderr, flush=True)
    optimum_cli = Path(sys.executable).with_name("optimum-cli")
    subprocess.run([str(optimum_cli), "export", "onnx", "--model", str(hf), "--task",
                    "text-generation-with-past", str(args.out / "onnx")], check=True)
    print(f"moe_model: wrote {args.out / 'onnx'}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
