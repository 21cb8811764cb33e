"""Llama as torch.onnx exports transformers' LlamaForCausalLM.

The module tree fixes the graph's shape: embedding, then per layer
`x + self_attn(input_layernorm(x))` and `x + mlp(post_attention_layernorm(x))` (the residual
adds belong to the layer), final norm, lm_head. The optimum (TorchScript) and standard
(dynamo, opset 23) styles share this and differ in the ops they emit for RMSNorm, Linear, rope
and attention.
"""
from __future__ import annotations

from dataclasses import dataclass

import onnx

from . import signature
from .blocks import DecoderBuilder, mlp
from .graph import GraphBuilder, ModelParts, Naming
from .llama import layer_prefix


@dataclass(frozen=True)
class Trace:
    """What the exporter traced: with past key/value inputs or not, and whether the example
    input had a single token (transformers skips the triangular mask then)."""

    with_past: bool = True
    one_token: bool = False


class TorchExportDecoder(DecoderBuilder):
    # The dynamo exporter puts each module's function in a package-named domain.
    function_domain = "pkg.transformers"
    producer = ("pytorch", "2.9.0")

    def naming(self) -> Naming:
        raise NotImplementedError

    # ---- what a style emits -------------------------------------------------------------------

    def rms_norm(self, g: GraphBuilder, x: str, weight: str) -> str:
        raise NotImplementedError

    def linear(self, g: GraphBuilder, x: str, module: str) -> str:
        raise NotImplementedError

    def prepare(self, g: GraphBuilder, trace: Trace):
        """Model-level values the layers share (attention mask, rope tables)."""
        raise NotImplementedError

    def attention(self, g: GraphBuilder, layer: int, x: str, shared, trace: Trace) -> str:
        """self_attn(x); writes the layer's present key and value outputs."""
        raise NotImplementedError

    # ---- the shared structure -----------------------------------------------------------------

    def build(self) -> onnx.ModelProto:
        g = GraphBuilder(ModelParts(self.naming(), opsets={"": self.opset}))
        self.declare(g)
        self.body(g)
        return g.model("main_graph", *self.producer)

    def declare(self, g: GraphBuilder) -> None:
        signature.declare(g, self.config, total_sequence=signature.OPTIMUM_TOTAL_SEQUENCE)

    def body(self, g: GraphBuilder) -> None:
        self.decoder(g, Trace())

    def decoder(self, g: GraphBuilder, trace: Trace) -> None:
        with g.scope("model"):
            with g.scope("embed_tokens"):
                x = g.op("Gather", self.weight(g, "model.embed_tokens.weight"),
                         signature.INPUT_IDS)
            shared = self.prepare(g, trace)
            for i in range(self.config.num_layers):
                x = self.decoder_layer(g, i, x, shared, trace)
            with g.scope("norm"):
                x = self.rms_norm(g, x, "model.norm.weight")
        with g.scope("lm_head"):
            g.rename(self.linear(g, x, "lm_head"), signature.LOGITS)

    def decoder_layer(self, g: GraphBuilder, layer: int, x: str, shared, trace: Trace) -> str:
        if not self.options.use_functions:
            return self.layer(g, layer, x, shared, trace)
        body = g.child()
        y = self.layer(body, layer, x, shared, trace)
        name = g.naming.unique(f"LlamaDecoderLayer_model_layers_{layer}")
        outputs = [y, signature.present_key(layer), signature.present_value(layer)]
        g.call_function(body, outputs, self.function_domain, name)
        return y

    def layer(self, g: GraphBuilder, layer: int, x: str, shared, trace: Trace) -> str:
        prefix = layer_prefix(layer)
        with g.scope(f"layers.{layer}"):
            with g.scope("input_layernorm"):
                h = self.rms_norm(g, x, f"{prefix}.input_layernorm.weight")
            with g.scope("self_attn"):
                h = self.attention(g, layer, h, shared, trace)
            x = g.op("Add", x, h)
            with g.scope("post_attention_layernorm"):
                h = self.rms_norm(g, x, f"{prefix}.post_attention_layernorm.weight")
            with g.scope("mlp"):
                h = self.mlp(g, h, f"{prefix}.mlp")
            return g.op("Add", x, h)

    def mlp(self, g: GraphBuilder, x: str, module: str) -> str:
        """The feed-forward block; a subclass may export another activation."""
        return mlp(g, x, module, self.linear)
