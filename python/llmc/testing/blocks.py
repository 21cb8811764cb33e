"""What every exporter style shares: option handling, weights, and the MLP block."""
from __future__ import annotations

import dataclasses
from typing import Callable, ClassVar

import numpy as np
import onnx

from .graph import GraphBuilder
from .llama import LlamaConfig, check_weights, rope_cos_sin

# linear(g, x, module) -> y for a Hugging Face module name such as "model.layers.0.mlp.up_proj";
# each style decides how the weight is stored and multiplied.
Linear = Callable[[GraphBuilder, str, str], str]


class DecoderBuilder:
    """Base of the style builders: checks the opset and the style's options.

    Subclasses set `style` (its name in build_model), `Options` (a dataclass of the style's
    options and their defaults), `supported_opsets` and `default_opset`, and implement `build`.
    """

    style: ClassVar[str]
    Options: ClassVar[type]
    supported_opsets: ClassVar[range]
    default_opset: ClassVar[int]

    def __init__(self, config: LlamaConfig, weights: dict[str, np.ndarray],
                 opset: int | None = None, **options):
        known = [f.name for f in dataclasses.fields(self.Options)]
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise ValueError(f"unknown option(s) {', '.join(unknown)} for style {self.style!r}; "
                             f"known: {', '.join(known)}")
        check_weights(config, weights)
        self.config = config
        self.weights = weights
        self.options = self.Options(**options)
        self.opset = self.default_opset if opset is None else opset
        if self.opset not in self.supported_opsets:
            raise ValueError(f"style {self.style!r} supports opsets {self.supported_opsets.start}"
                             f"..{self.supported_opsets.stop - 1}, not {self.opset}")

    def build(self) -> onnx.ModelProto:
        raise NotImplementedError

    def weight(self, g: GraphBuilder, name: str) -> str:
        """A weight stored as is, under its Hugging Face name."""
        return g.initializer(name, self.weights[name])


def mlp(g: GraphBuilder, x: str, module: str, linear: Linear) -> str:
    """down_proj(silu(gate_proj(x)) * up_proj(x)), silu written as x * Sigmoid(x)."""
    with g.scope("gate_proj"):
        gate = linear(g, x, f"{module}.gate_proj")
    with g.scope("act_fn"):
        act = g.op("Mul", gate, g.op("Sigmoid", gate))
    with g.scope("up_proj"):
        up = linear(g, x, f"{module}.up_proj")
    hidden = g.op("Mul", act, up)
    with g.scope("down_proj"):
        return linear(g, hidden, f"{module}.down_proj")


def rope_caches(g: GraphBuilder, config: LlamaConfig) -> tuple[str, str]:
    """cos/sin caches [max_position_embeddings, head_dim / 2]: the half-width form that ONNX
    RotaryEmbedding and com.microsoft GroupQueryAttention read (each half of the head uses the
    same frequencies, where Hugging Face computes cat(freqs, freqs) at full width)."""
    cos, sin = rope_cos_sin(config, np.arange(config.max_position_embeddings))
    half = config.head_dim // 2
    return g.initializer("cos_cache", cos[:, :half]), g.initializer("sin_cache", sin[:, :half])
