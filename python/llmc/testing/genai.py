"""The "genai" style: onnxruntime-genai's model builder, opset 21 plus com.microsoft ops.

- the first norm is SimplifiedLayerNormalization (which onnxruntime registers in the ONNX
  domain); every later norm is com.microsoft.SkipSimplifiedLayerNormalization, which adds the
  residual and returns the sum as its fourth output;
- Linear: MatMul on an [in, out] initializer named after the node
  (`model.layers.0.attn.q_proj.MatMul.weight`), or MatMulNBits for int4;
- attention: com.microsoft.GroupQueryAttention with rope fused (do_rotary=1, half-width cos/sin
  caches) and no position_ids input; seqlens_k = sum(attention_mask) - 1 and
  total_sequence_length are computed in-graph from attention_mask;
- a tied embedding is a Transpose of the lm_head weight, or GatherBlockQuantized over the
  lm_head's int4 weight.

GroupQueryAttention takes each sequence's length from attention_mask's sum, so padded prompts
must be right-padded (valid tokens first).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, defs

from . import signature
from .blocks import DecoderBuilder, mlp, rope_caches
from .graph import GenaiNaming, GraphBuilder, ModelParts
from .llama import LlamaConfig, layer_prefix, lm_head_weight
from .quant import Int4Weight, quantize_int4

MS_DOMAIN = "com.microsoft"


@dataclass(frozen=True)
class GenaiOptions:
    # "int4": MatMulNBits for every projection and the lm_head (and GatherBlockQuantized for a
    # tied embedding); None: float MatMul.
    quant: str | None = None
    int4_block_size: int = 32
    # onnxruntime-genai's default; False writes asymmetric blocks with explicit zero points.
    int4_symmetric: bool = True
    # One MatMul for q, k and v, feeding GroupQueryAttention's packed query input.
    packed_qkv: bool = False

    def __post_init__(self):
        if self.quant not in (None, "int4"):
            raise ValueError(f"quant must be None or 'int4', not {self.quant!r}")


@dataclass
class Shared:
    seqlens_k: str
    total_sequence_length: str
    cos_cache: str
    sin_cache: str


class GenaiDecoder(DecoderBuilder):
    style = "genai"
    Options = GenaiOptions
    supported_opsets = range(21, 22)
    default_opset = 21

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._int4: dict[str, Int4Weight] = {}

    def build(self) -> onnx.ModelProto:
        c = self.config
        g = GraphBuilder(ModelParts(GenaiNaming(), opsets={"": self.opset, MS_DOMAIN: 1}))
        signature.declare(g, c, total_sequence=signature.GENAI_TOTAL_SEQUENCE,
                          position_ids=False)
        with g.scope("model"):
            with g.scope("embed_tokens"):
                residual = self.embedding(g)
            shared = self.prepare(g)
            delta = None
            for i in range(c.num_layers):
                prefix = layer_prefix(i)
                with g.scope(f"layers.{i}"):
                    with g.scope("input_layernorm"):
                        h, residual = self.add_norm(g, residual, delta,
                                                    f"{prefix}.input_layernorm.weight")
                    with g.scope("attn"):
                        delta = self.attention(g, i, h, shared)
                    with g.scope("post_attention_layernorm"):
                        h, residual = self.add_norm(g, residual, delta,
                                                    f"{prefix}.post_attention_layernorm.weight")
                    with g.scope("mlp"):
                        delta = mlp(g, h, f"{prefix}.mlp", self.linear)
            with g.scope("norm"):
                h, _ = self.add_norm(g, residual, delta, "model.norm.weight", last=True)
        with g.scope("lm_head"):
            g.rename(self.linear(g, h, "lm_head"), signature.LOGITS)
        return g.model("main_graph", "onnxruntime-genai", "0.11.0")

    # ---- pieces -------------------------------------------------------------------------------

    def embedding(self, g: GraphBuilder) -> str:
        c = self.config
        if not c.tie_word_embeddings:
            return g.op("Gather", self.weight(g, "model.embed_tokens.weight"),
                        signature.INPUT_IDS)
        # Tied: the embedding reads the lm_head's weight (named as the lm_head MatMul names it).
        lm_head = "lm_head.MatMul"
        if self.options.quant is None:
            table = g.op("Transpose", g.initializer(f"{lm_head}.weight", lm_head_weight(
                c, self.weights).T), perm=[1, 0])
            return g.op("Gather", table, signature.INPUT_IDS)
        q = self.int4(lm_head, lm_head_weight(c, self.weights))
        if c.hidden_size % q.block_size:
            raise ValueError("GatherBlockQuantized needs hidden_size to be a multiple of "
                             f"int4_block_size {q.block_size}")
        packed, scales, zero_points = self.int4_initializers(g, lm_head, q)
        data = g.op("Reshape", packed, g.const([c.vocab_size, c.hidden_size // 2]))
        return g.op("GatherBlockQuantized", data, signature.INPUT_IDS, scales, zero_points,
                    domain=MS_DOMAIN, bits=4, block_size=q.block_size, gather_axis=0,
                    quantize_axis=1)

    def prepare(self, g: GraphBuilder) -> Shared:
        with g.scope("attn_mask_reformat", "attn_mask_subgraph"):
            lengths = g.op("ReduceSum", signature.ATTENTION_MASK, g.const([1]), keepdims=0)
            seqlens_k = g.op("Cast", g.op("Sub", lengths, g.const([1])), to=TensorProto.INT32)
            total = g.op("Gather", g.op("Shape", signature.ATTENTION_MASK), g.const(1), axis=0)
            total = g.op("Cast", total, to=TensorProto.INT32)
        return Shared(seqlens_k, total, *rope_caches(g, self.config))

    def add_norm(self, g: GraphBuilder, residual: str, delta: str | None, weight: str,
                 last: bool = False) -> tuple[str, str | None]:
        """norm(residual + delta) and the new residual; the first norm has no delta."""
        w = self.weight(g, weight)
        eps = self.config.rms_norm_eps
        if delta is None:
            return g.op("SimplifiedLayerNormalization", residual, w, axis=-1, epsilon=eps,
                        stash_type=1), residual
        if last:
            return g.op("SkipSimplifiedLayerNormalization", residual, delta, w,
                        domain=MS_DOMAIN, epsilon=eps), None
        normed, _, _, total = g.op("SkipSimplifiedLayerNormalization", residual, delta, w,
                                   outputs=[None, "", "", None], domain=MS_DOMAIN, epsilon=eps)
        return normed, total

    def attention(self, g: GraphBuilder, layer: int, x: str, shared: Shared) -> str:
        c = self.config
        module = f"{layer_prefix(layer)}.self_attn"
        names = [f"{module}.{p}_proj" for p in "qkv"]
        if self.options.packed_qkv:
            weight = np.concatenate([self.weights[f"{n}.weight"] for n in names])
            bias = np.concatenate([self.weights[f"{n}.bias"] for n in names]) \
                if c.qkv_bias else None
            with g.scope("qkv_proj"):
                q, k, v = self.matmul(g, x, weight, bias), None, None
        else:
            q, k, v = (self.scoped_linear(g, x, n) for n in names)
        out = g.op("GroupQueryAttention", q, k, v,
                   signature.past_key(layer), signature.past_value(layer),
                   shared.seqlens_k, shared.total_sequence_length,
                   shared.cos_cache, shared.sin_cache,
                   outputs=[None, signature.present_key(layer), signature.present_value(layer)],
                   domain=MS_DOMAIN, num_heads=c.num_heads, kv_num_heads=c.num_kv_heads,
                   scale=1.0 / math.sqrt(c.head_dim), do_rotary=1, rotary_interleaved=0,
                   local_window_size=-1, softcap=0.0)[0]
        return self.scoped_linear(g, out, f"{module}.o_proj")

    def scoped_linear(self, g: GraphBuilder, x: str, module: str) -> str:
        with g.scope(module.rsplit(".", 1)[1]):
            return self.linear(g, x, module)

    def linear(self, g: GraphBuilder, x: str, module: str) -> str:
        if module == "lm_head":
            return self.matmul(g, x, lm_head_weight(self.config, self.weights))
        return self.matmul(g, x, self.weights[f"{module}.weight"],
                           self.weights.get(f"{module}.bias"))

    def matmul(self, g: GraphBuilder, x: str, weight: np.ndarray,
               bias: np.ndarray | None = None) -> str:
        """x @ weight.T (+ bias), weight [out, in]; initializers named after the node."""
        base = g.scope_name[1:].replace("/", ".")
        if self.options.quant is None:
            y = g.op("MatMul", x, g.initializer(f"{base}.MatMul.weight", weight.T))
        else:
            q = self.int4(f"{base}.MatMul", weight)
            y = g.op("MatMulNBits", x, *self.int4_initializers(g, f"{base}.MatMul", q),
                     domain=MS_DOMAIN, K=q.in_features, N=q.out_features, bits=4,
                     block_size=q.block_size)
        if bias is not None:
            y = g.op("Add", y, g.initializer(f"{base}.Add.bias", bias))
        return y

    def int4(self, name: str, weight: np.ndarray) -> Int4Weight:
        if name not in self._int4:
            self._int4[name] = quantize_int4(weight, self.options.int4_block_size,
                                             self.options.int4_symmetric)
        return self._int4[name]

    @staticmethod
    def int4_initializers(g: GraphBuilder, name: str, q: Int4Weight) -> list[str | None]:
        """B, scales and zero points (None when symmetric), named as onnxruntime's quantizer
        names them."""
        zero_points = None if q.zero_points is None \
            else g.initializer(f"{name}.weight_zero_points", q.zero_points)
        return [g.initializer(f"{name}.weight_Q4", q.packed),
                g.initializer(f"{name}.weight_scales", q.scales), zero_points]


def dequantized_weights(config: LlamaConfig, weights: dict[str, np.ndarray],
                        options: GenaiOptions) -> dict[str, np.ndarray]:
    """The float weights a genai model computes with: int4 projections (and a tied
    embedding) replaced by their dequantized values."""
    if options.quant is None:
        return weights

    def roundtrip(w: np.ndarray) -> np.ndarray:
        return quantize_int4(w, options.int4_block_size, options.int4_symmetric).dequantize()

    result = {name: roundtrip(w) if name.endswith("_proj.weight") else w
              for name, w in weights.items()}
    if config.tie_word_embeddings:
        result["model.embed_tokens.weight"] = roundtrip(weights["model.embed_tokens.weight"])
    else:
        result["lm_head.weight"] = roundtrip(weights["lm_head.weight"])
    return result


def register_onnx_schemas() -> None:
    """Teach onnx.checker onnxruntime's SimplifiedLayerNormalization, which onnxruntime
    registers in the ONNX domain (com.microsoft ops are not checked at all)."""
    if defs.has("SimplifiedLayerNormalization"):
        return
    floats = ["tensor(float)", "tensor(float16)", "tensor(bfloat16)", "tensor(double)"]
    optional = defs.OpSchema.FormalParameterOption.Optional
    defs.register_schema(defs.OpSchema(
        "SimplifiedLayerNormalization", "", 1,
        inputs=[defs.OpSchema.FormalParameter("X", "T"),
                defs.OpSchema.FormalParameter("scale", "V")],
        outputs=[defs.OpSchema.FormalParameter("Y", "V"),
                 defs.OpSchema.FormalParameter("inv_std_var", "U", param_option=optional)],
        type_constraints=[("T", floats, ""), ("V", floats, ""), ("U", ["tensor(float)"], "")],
        attributes=[defs.OpSchema.Attribute("axis", defs.OpSchema.AttrType.INT, ""),
                    defs.OpSchema.Attribute("epsilon", defs.OpSchema.AttrType.FLOAT, ""),
                    defs.OpSchema.Attribute("stash_type", defs.OpSchema.AttrType.INT, "")],
    ))
