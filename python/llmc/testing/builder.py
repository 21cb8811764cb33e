"""Build seeded Llama-architecture ONNX models in the op structure of real exporters.

    model = build_model(VARIANTS["gqa"], "optimum", seed=0, merged=True)
    save_model(model, "out/model.onnx", external_data=True)

Styles: "optimum" (torch.onnx TorchScript via optimum, opset 14-17), "genai"
(onnxruntime-genai's builder, opset 21 + com.microsoft), "standard" (torch dynamo, opset 23
fused standard ops). Each style's module documents its options.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx

from .blocks import DecoderBuilder
from .genai import GenaiDecoder, dequantized_weights
from .llama import LlamaConfig, random_weights
from .optimum import OptimumDecoder
from .standard import StandardDecoder

STYLES: dict[str, type[DecoderBuilder]] = {
    builder.style: builder for builder in (OptimumDecoder, GenaiDecoder, StandardDecoder)}

PROTOBUF_LIMIT = 2**31 - 1


def decoder_builder(config: LlamaConfig, style: str, weights: dict[str, np.ndarray] | None = None,
                    seed: int = 0, opset: int | None = None, **options) -> DecoderBuilder:
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}; expected one of {', '.join(STYLES)}")
    if weights is None:
        weights = random_weights(config, seed)
    return STYLES[style](config, weights, opset, **options)


def build_model(config: LlamaConfig, style: str, weights: dict[str, np.ndarray] | None = None,
                seed: int = 0, opset: int | None = None, **options) -> onnx.ModelProto:
    """An ONNX decoder for `config` in an exporter's style.

    weights: Hugging Face names and layouts, float32 (default: random_weights(config, seed)).
    """
    return decoder_builder(config, style, weights, seed, opset, **options).build()


def effective_weights(config: LlamaConfig, style: str,
                      weights: dict[str, np.ndarray] | None = None, seed: int = 0,
                      opset: int | None = None, **options) -> dict[str, np.ndarray]:
    """The float weights the built model computes with, for reference_forward: the weights
    themselves, or their dequantized values where the style quantizes them."""
    builder = decoder_builder(config, style, weights, seed, opset, **options)
    if isinstance(builder, GenaiDecoder):
        return dequantized_weights(config, builder.weights, builder.options)
    return builder.weights


def save_model(model: onnx.ModelProto, path: str | os.PathLike,
               external_data: bool = False) -> Path:
    """Write `model` to `path`; with external_data, tensors go to `<name>_data` next to it
    (model.onnx -> model.onnx_data), as optimum writes them. Like onnx.save_model, saving with
    external data moves the tensor bytes out of `model`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not external_data:
        if model.ByteSize() > PROTOBUF_LIMIT:
            raise ValueError(f"{path}: model exceeds protobuf's 2 GiB; save with external_data")
        onnx.save_model(model, path)
        return path
    location = path.name + "_data"
    # onnx appends to an existing data file.
    (path.parent / location).unlink(missing_ok=True)
    onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=location, size_threshold=1024)
    return path
