"""Seeded random LoRA adapters (PEFT) on a model that tiny_models.py saved, each also merged
into the model, for the LoRA fixtures: llmc serves the adapter on the base model's export,
onnxruntime runs the export of the merged model.

    python lora_adapters.py HF_MODEL OUT

writes OUT/<adapter>/ (adapter_config.json, adapter_model.safetensors: what PEFT's
save_pretrained writes) and OUT/<adapter>-merged/ (the transformers model with the adapter
merged into its weights, merge_and_unload) for each adapter below. Run in .venv-optimum.
"""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import torch
import transformers
from peft import LoraConfig, get_peft_model

SEED = 1234

# name -> LoraConfig arguments. init_lora_weights=False draws both A and B at random (PEFT's
# default starts B at zero: an adapter that changes nothing).
ADAPTERS = {
    # The attention projections at rank 8.
    "attention": dict(r=8, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj",
                                                          "o_proj"]),
    # Every linear of the second layer only, rank-stabilised scaling, another alpha for
    # down_proj.
    "mlp-layer1": dict(r=4, lora_alpha=8, use_rslora=True, layers_to_transform=[1],
                       target_modules=["q_proj", "gate_proj", "up_proj", "down_proj"],
                       alpha_pattern={"down_proj": 2}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    for index, (name, settings) in enumerate(ADAPTERS.items()):
        base = transformers.AutoModelForCausalLM.from_pretrained(args.model,
                                                                 dtype=torch.float32)
        torch.manual_seed(SEED + index)
        model = get_peft_model(base, LoraConfig(init_lora_weights=False, **settings))
        model.eval()
        model.save_pretrained(args.out / name, safe_serialization=True)
        # PEFT records where the base model was read from (here a temporary directory) and
        # the target modules as a set: the same files each time.
        config_path = args.out / name / "adapter_config.json"
        config = json.loads(config_path.read_text())
        config["base_model_name_or_path"] = args.model.name
        config["target_modules"] = sorted(config["target_modules"])
        config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        merged = model.merge_and_unload()
        merged.save_pretrained(args.out / f"{name}-merged")
        for file in ("generation_config.json", "tokenizer.json", "tokenizer_config.json",
                     "special_tokens_map.json"):
            if (args.model / file).exists():
                shutil.copy(args.model / file, args.out / f"{name}-merged" / file)
        print(f"lora_adapters: {name}", flush=True)


if __name__ == "__main__":
    main()
