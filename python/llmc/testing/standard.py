"""The "standard" style: torch.onnx's dynamo exporter at opset >= 23, with standard fused ops.

- RMSNorm: RMSNormalization;
- Linear: MatMul(x, Transpose(weight)) with the weight kept in its [out, in] layout under its
  Hugging Face name (the exporter's constant folding leaves large transposes in place);
- rope: RotaryEmbedding over half-width cos/sin caches [max_positions, head_dim / 2] indexed by
  position_ids, on 4-D [batch, heads, seq, head_dim] or 3-D [batch, seq, hidden] inputs;
- attention: Attention with past_key/past_value in and present_key/present_value out, GQA by
  q_num_heads/kv_num_heads, is_causal=1 and a boolean [batch, 1, seq, total] padding mask.

onnxruntime aligns is_causal to the bottom right (query i sees keys up to past + i), which is
what a KV cache needs; the opset 23 text describes an upper-left alignment.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from onnx import TensorProto

from . import signature
from .graph import DynamoNaming, GraphBuilder, Naming
from .llama import layer_prefix
from .blocks import rope_caches
from .torch_export import TorchExportDecoder, Trace


@dataclass(frozen=True)
class StandardOptions:
    # Wrap each decoder layer in a local function, as the dynamo exporter can leave them.
    use_functions: bool = False
    # "4d": heads split before RotaryEmbedding and Attention; "3d": both run on
    # [batch, seq, heads * head_dim] with num_heads attributes.
    attention_layout: str = "4d"

    def __post_init__(self):
        if self.attention_layout not in ("4d", "3d"):
            raise ValueError(f"attention_layout must be '4d' or '3d', "
                             f"not {self.attention_layout!r}")


@dataclass
class Shared:
    mask: str  # bool [batch, 1, seq, total], True where a key may be attended
    cos_cache: str  # [max_positions, head_dim / 2]
    sin_cache: str


class StandardDecoder(TorchExportDecoder):
    style = "standard"
    Options = StandardOptions
    supported_opsets = range(23, 25)
    default_opset = 23

    def naming(self) -> Naming:
        return DynamoNaming()

    def rms_norm(self, g: GraphBuilder, x: str, weight: str) -> str:
        return g.op("RMSNormalization", x, self.weight(g, weight), axis=-1,
                    epsilon=self.config.rms_norm_eps)

    def linear(self, g: GraphBuilder, x: str, module: str) -> str:
        if module == "lm_head" and self.config.tie_word_embeddings:
            module = "model.embed_tokens"
        weight = g.op("Transpose", self.weight(g, f"{module}.weight"), perm=[1, 0])
        y = g.op("MatMul", x, weight)
        if f"{module}.bias" in self.weights:
            y = g.op("Add", y, self.weight(g, f"{module}.bias"))
        return y

    def prepare(self, g: GraphBuilder, trace: Trace) -> Shared:
        seq = g.op("Shape", signature.INPUT_IDS, start=1, end=2)
        keep = g.op("Cast", g.op("Unsqueeze", signature.ATTENTION_MASK, g.const([1, 2])),
                    to=TensorProto.BOOL)
        mask = g.op("Expand", keep, g.op("Concat", g.const([1, 1]), seq, g.const([1]), axis=0))
        return Shared(mask, *rope_caches(g, self.config))

    def attention(self, g: GraphBuilder, layer: int, x: str, shared: Shared,
                  trace: Trace) -> str:
        c = self.config
        module = f"{layer_prefix(layer)}.self_attn"
        four_d = self.options.attention_layout == "4d"
        batch_seq = g.op("Shape", x, start=0, end=2)
        projected = {}
        for name, heads in (("q", c.num_heads), ("k", c.num_kv_heads), ("v", c.num_kv_heads)):
            with g.scope(f"{name}_proj"):
                y = self.linear(g, x, f"{module}.{name}_proj")
            if four_d:
                shape = g.op("Concat", batch_seq, g.const([heads, c.head_dim]), axis=0)
                y = g.op("Transpose", g.op("Reshape", y, shape), perm=[0, 2, 1, 3])
            if name != "v":
                heads_attr = {} if four_d else {"num_heads": heads}
                y = g.op("RotaryEmbedding", y, shared.cos_cache, shared.sin_cache,
                         signature.POSITION_IDS, **heads_attr)
            projected[name] = y
        heads_attrs = {} if four_d else {"q_num_heads": c.num_heads,
                                         "kv_num_heads": c.num_kv_heads}
        out = g.op("Attention", projected["q"], projected["k"], projected["v"], shared.mask,
                   signature.past_key(layer), signature.past_value(layer),
                   outputs=[None, signature.present_key(layer), signature.present_value(layer)],
                   is_causal=1, scale=1.0 / math.sqrt(c.head_dim), **heads_attrs)[0]
        if four_d:
            shape = g.op("Concat", batch_seq, g.const([c.q_size]), axis=0)
            out = g.op("Reshape", g.op("Transpose", out, perm=[0, 2, 1, 3]), shape)
        with g.scope("o_proj"):
            return self.linear(g, out, f"{module}.o_proj")
