"""The default model (SmolLM2-135M-Instruct, Q4_1 GGUF) as a transformers directory, and
transformers' greedy tokens on it: what the exporters are given, and the reference their
exports are checked against.

    python scripts/exporters/default_model.py GGUF OUT_DIR --prompt TEXT [--prompt TEXT ...]
        [--tokens N]

transformers reads the GGUF (`from_pretrained(dir, gguf_file=...)`, dequantized to f32) and
saves it to OUT_DIR/hf; OUT_DIR/reference.json holds each prompt's token ids and the (at most
N, ending at eos) tokens `generate(do_sample=False)` continues it with. Runs in .venv-optimum (transformers 4.57,
gguf); see bench/exporters_default_model.py.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gguf", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--prompt", action="append", required=True)
    parser.add_argument("--tokens", type=int, default=32)
    args = parser.parse_args()

    source = dict(pretrained_model_name_or_path=args.gguf.parent, gguf_file=args.gguf.name)
    tokenizer = AutoTokenizer.from_pretrained(**source)
    model = AutoModelForCausalLM.from_pretrained(**source, dtype=torch.float32).eval()
    model.save_pretrained(args.out / "hf")
    model.generation_config.save_pretrained(args.out / "hf")
    tokenizer.save_pretrained(args.out / "hf")

    reference = []
    for prompt in args.prompt:
        ids = tokenizer(prompt, return_tensors="pt").input_ids
        with torch.no_grad():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                 max_new_tokens=args.tokens, pad_token_id=tokenizer.eos_token_id)
        reference.append({"prompt": prompt, "prompt_ids": ids[0].tolist(),
                          "tokens": out[0, ids.shape[1]:].tolist()})
    (args.out / "reference.json").write_text(json.dumps(reference, indent=1))


if __name__ == "__main__":
    main()
