"""The model variants and the fixture set every part of llmc is tested on."""
from __future__ import annotations

import dataclasses
import json
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
    # ~1.1B parameters in TinyLlama-1.1B's shape (4.4 GB of float32 weights), for GPU benchmarks.
    "tinyllama-1b": LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632,
                                num_layers=22, num_heads=32, num_kv_heads=4),
}

# The benchmark sizes: too large for the fixture set.
LARGE_VARIANTS = ("bench", "tinyllama-1b")
SMALL_VARIANTS = [name for name in VARIANTS if name not in LARGE_VARIANTS]

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


def write_variant(variant: str, directory: str | os.PathLike, style: str = "optimum",
                  seed: int = 0, **sizes) -> Path:
    """Build VARIANTS[variant] in `style` into <directory>/model.onnx with its tensors in
    model.onnx_data, unless <directory>/build.json says that this build is already there.

    `sizes` replace fields of the variant's LlamaConfig (e.g. num_layers=2, hidden_size=64):
    the same graph structure at another size; head_dim follows hidden_size // num_heads unless
    given. A large variant takes a while and about 2.5 times its float32 weights' size in
    memory to build (tinyllama-1b: ~11 GB), hence the cache.
    """
    config = dataclasses.replace(VARIANTS[variant], **{"head_dim": None, **sizes})
    directory = Path(directory)
    path, stamp = directory / "model.onnx", directory / "build.json"
    build = {"variant": variant, "style": style, "seed": seed,
             "config": dataclasses.asdict(config)}
    if path.exists() and stamp.exists() and json.loads(stamp.read_text()) == build:
        return path
    stamp.unlink(missing_ok=True)
    save_model(build_model(config, style, seed=seed), path, external_data=True)
    stamp.write_text(json.dumps(build, indent=2) + "\n")
    return path
