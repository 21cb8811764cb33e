"""The model variants and the fixture set every part of llmc is tested on."""
from __future__ import annotations

import os
from pathlib import Path

from .builder import STYLES, build_model, save_model
from .llama import LlamaConfig

_SMALL = dict(vocab_size=512, hidden_size=128, intermediate_size=344, num_layers=2)

VARIANTS: dict[str, LlamaConfig] = {
    "mha": LlamaConfig(**_SMALL, num_heads=4, num_kv_heads=4),
    "gqa": LlamaConfig(**_SMALL, num_heads=8, num_kv_heads=2),
    "mqa": LlamaConfig(**_SMALL, num_heads=4, num_kv_heads=1),
    "tied": LlamaConfig(**_SMALL, num_heads=4, num_kv_heads=2, tie_word_embeddings=True),
    "qwen2": LlamaConfig(**_SMALL, num_heads=4, num_kv_heads=2, qkv_bias=True,
                         rope_theta=1e6, rms_norm_eps=1e-6),
    "theta": LlamaConfig(**_SMALL, num_heads=4, num_kv_heads=2, rope_theta=500000.0),
    # ~100M parameters, for benchmarks.
    "bench": LlamaConfig(vocab_size=32000, hidden_size=768, intermediate_size=2048,
                         num_layers=8, num_heads=12, num_kv_heads=4),
}

SMALL_VARIANTS = [name for name in VARIANTS if name != "bench"]

# (style, variant, options): options go to build_model, except `external_data` (save_model).
FIXTURES: list[tuple[str, str, dict]] = [
    *[(style, variant, {}) for style in STYLES for variant in SMALL_VARIANTS],
    ("optimum", "gqa", {"merged": True}),
    ("optimum", "qwen2", {"use_functions": True}),
    ("optimum", "mha", {"rope_style": "cache"}),
    ("optimum", "gqa", {"rmsnorm_reciprocal": True}),
    ("optimum", "mqa", {"rmsnorm_cast": True, "opset": 14}),
    ("optimum", "tied", {"external_data": True}),
    ("genai", "gqa", {"quant": "int4"}),
    ("genai", "tied", {"quant": "int4"}),  # GatherBlockQuantized embedding
    ("genai", "qwen2", {"packed_qkv": True}),
    ("genai", "mqa", {"quant": "int4", "int4_symmetric": False, "packed_qkv": True}),
    ("standard", "gqa", {"attention_layout": "3d"}),
    ("standard", "qwen2", {"use_functions": True}),
]


def fixture_name(style: str, variant: str, options: dict) -> str:
    """<style>-<variant>[-<option>...]: a true flag by its name, other values as key_value."""
    parts = [style, variant]
    for key, value in options.items():
        parts.append(key if value is True else f"{key}_{value}")
    return "-".join(parts)


def write_fixture(style: str, variant: str, options: dict, directory: str | os.PathLike,
                  seed: int = 0) -> Path:
    """Build one fixture into <directory>/<fixture_name>/model.onnx and return that path."""
    build_options = dict(options)
    external_data = build_options.pop("external_data", False)
    model = build_model(VARIANTS[variant], style, seed=seed, **build_options)
    path = Path(directory) / fixture_name(style, variant, options) / "model.onnx"
    return save_model(model, path, external_data=external_data)
