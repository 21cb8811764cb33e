"""Exports a Hugging Face decoder directory with torch.onnx's dynamo exporter, KV cache included.

    python scripts/exporters/dynamo_export.py HF_DIR OUT_DIR --opset N [--no-cache]

Uses transformers' OnnxExporter (transformers.exporters: torch.export, then
torch.onnx.export(..., dynamo=True) with the patches transformers keeps for its models) on
example inputs with a past, so that the graph takes and returns the cache; every dim is
dynamic. `--no-cache` exports forward() without the cache instead (`use_cache=False`, no
past): the graph takes the token ids and the attention mask and returns the logits, as a
plain export of the model does. Writes OUT_DIR/model.onnx (+ model.onnx.data) and config.json. Runs in .venv-genai
(transformers 5, torch, onnxscript); see scripts/make-exporter-fixtures.sh.
"""
from __future__ import annotations

import argparse

import torch
from transformers import AutoModelForCausalLM, DynamicCache
from transformers.exporters import OnnxConfig, OnnxExporter

BATCH, PAST, NEW = 2, 3, 4


def example_inputs(model) -> dict:
    """A batch with a past of PAST tokens and NEW new ones, all attended."""
    config = model.config
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    generator = torch.Generator().manual_seed(0)
    cache = DynamicCache(config=config)
    for layer in range(config.num_hidden_layers):
        cache.update(torch.randn(BATCH, kv_heads, PAST, head_dim, generator=generator),
                     torch.randn(BATCH, kv_heads, PAST, head_dim, generator=generator), layer)
    return dict(
        input_ids=torch.randint(3, config.vocab_size, (BATCH, NEW), generator=generator),
        attention_mask=torch.ones(BATCH, PAST + NEW, dtype=torch.int64),
        position_ids=torch.arange(PAST, PAST + NEW).expand(BATCH, NEW),
        past_key_values=cache, use_cache=True)


def example_inputs_without_cache(model) -> dict:
    """A batch of NEW tokens and no cache."""
    generator = torch.Generator().manual_seed(0)
    return dict(
        input_ids=torch.randint(3, model.config.vocab_size, (BATCH, NEW), generator=generator),
        attention_mask=torch.ones(BATCH, NEW, dtype=torch.int64),
        position_ids=torch.arange(NEW).expand(BATCH, NEW), use_cache=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("out")
    parser.add_argument("--opset", type=int, required=True)
    parser.add_argument("--no-cache", action="store_true",
                        help="export forward() without the KV cache")
    args = parser.parse_args()
    model = AutoModelForCausalLM.from_pretrained(args.model).eval()
    inputs = example_inputs_without_cache(model) if args.no_cache else example_inputs(model)
    exported = OnnxExporter().export(model, inputs,
                                     config=OnnxConfig(dynamic=True, opset_version=args.opset))
    exported.save_pretrained(args.out)


if __name__ == "__main__":
    main()
