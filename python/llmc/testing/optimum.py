"""The "optimum" style: Hugging Face optimum's export through torch.onnx (TorchScript), opset <= 17.

Everything is decomposed into basic ops, with shapes computed in-graph the way tracing records
them (Shape -> Gather -> Unsqueeze -> Concat -> Reshape):

- RMSNorm: Pow, ReduceMean, Add(eps), Sqrt, Div(1, .) (or Reciprocal), Mul, Mul(weight);
- Linear: MatMul with the weight folded to [in, out] as an `onnx::MatMul_N` initializer;
- rope: cos/sin of cat(freqs, freqs) computed from an inv_freq constant and position_ids
  (transformers >= 4.38), or gathered from cos/sin cache tables (older releases);
  rotate_half as Slice, Neg, Concat;
- attention: MatMul, Div(sqrt(head_dim)), Add(4-D mask), Softmax, MatMul; repeat_kv as
  Unsqueeze, Expand, Reshape; the KV cache as Concat(past, new) feeding present outputs;
- the 4-D mask built once, as transformers' _prepare_4d_causal_attention_mask_with_cache_position
  does: a finfo(float32).min matrix, Trilu, a cache-position comparison, and the padding mask.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from onnx import TensorProto, numpy_helper

from . import signature
from .graph import GraphBuilder, Naming, TorchScriptNaming
from .llama import F32_MIN, layer_prefix, rope_cos_sin, rope_inv_freq
from .torch_export import TorchExportDecoder, Trace

INT64_MAX = np.iinfo(np.int64).max


@dataclass(frozen=True)
class OptimumOptions:
    # optimum's merged decoder: an If on `use_cache_branch` between the with-past graph and
    # the graph without past (both written as separate exports traced them).
    merged: bool = False
    # Wrap each decoder layer in a local function, as the dynamo exporter leaves modules.
    use_functions: bool = False
    # "inline": cos/sin computed from inv_freq and position_ids; "cache": Gather from
    # precomputed [max_position_embeddings, head_dim] tables.
    rope_style: str = "inline"
    # RMSNorm's 1/sqrt as Reciprocal instead of Div(1, .).
    rmsnorm_reciprocal: bool = False
    # The Casts to float32 and back that torch records around RMSNorm (no-ops in fp32).
    rmsnorm_cast: bool = False

    def __post_init__(self):
        if self.rope_style not in ("inline", "cache"):
            raise ValueError(f"rope_style must be 'inline' or 'cache', not {self.rope_style!r}")


@dataclass
class Shared:
    mask: str  # additive [batch, 1, seq, total]
    cos: str  # [batch, seq, head_dim]
    sin: str


def dim(g: GraphBuilder, x: str, axis: int) -> str:
    """x.shape[axis] as torch traces it: a scalar Gather of Shape."""
    return g.op("Gather", g.op("Shape", x), g.const(axis), axis=0)


def unsqueeze(g: GraphBuilder, x: str, *axes: int) -> str:
    return g.op("Unsqueeze", x, g.const(list(axes)))


def shape_of(g: GraphBuilder, *dims) -> str:
    """A shape tensor from traced scalar dims (str) and constant sizes (int)."""
    parts = [unsqueeze(g, d, 0) if isinstance(d, str) else g.const([d]) for d in dims]
    return g.op("Concat", *parts, axis=0)


class OptimumDecoder(TorchExportDecoder):
    style = "optimum"
    Options = OptimumOptions
    supported_opsets = range(14, 18)
    default_opset = 17

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._matmul_weights: dict[str, str] = {}

    def naming(self) -> Naming:
        return TorchScriptNaming()

    # ---- merged decoder -----------------------------------------------------------------------

    def declare(self, g: GraphBuilder) -> None:
        signature.declare(g, self.config, total_sequence=signature.OPTIMUM_TOTAL_SEQUENCE,
                          use_cache_branch=self.options.merged)

    def body(self, g: GraphBuilder) -> None:
        if not self.options.merged:
            self.decoder(g, Trace(with_past=True))
            return
        # optimum exports the decoder twice and merges the two graphs under one If; the
        # with-past graph was traced with a single new token.
        branches = {}
        for with_past in (True, False):
            branch = g.child()
            self.decoder(branch, Trace(with_past=with_past, one_token=with_past))
            branch.outputs = list(g.outputs)
            branches[with_past] = branch.graph("with_past" if with_past else "no_past")
        g.op("If", signature.USE_CACHE_BRANCH, outputs=[o.name for o in g.outputs],
             name="optimum::if", then_branch=branches[True], else_branch=branches[False])

    # ---- ops ----------------------------------------------------------------------------------

    def rms_norm(self, g: GraphBuilder, x: str, weight: str) -> str:
        o = self.options
        if o.rmsnorm_cast:
            x = g.op("Cast", x, to=TensorProto.FLOAT)
        variance = g.op("ReduceMean", g.op("Pow", x, g.const(2.0)), axes=[-1], keepdims=1)
        std = g.op("Sqrt", g.op("Add", variance, g.const(self.config.rms_norm_eps)))
        inv_std = g.op("Reciprocal", std) if o.rmsnorm_reciprocal \
            else g.op("Div", g.const(1.0), std)
        y = g.op("Mul", x, inv_std)
        if o.rmsnorm_cast:
            y = g.op("Cast", y, to=TensorProto.FLOAT)
        return g.op("Mul", self.weight(g, weight), y)

    def linear(self, g: GraphBuilder, x: str, module: str) -> str:
        if module == "lm_head" and self.config.tie_word_embeddings:
            weight = g.op("Transpose", self.weight(g, "model.embed_tokens.weight"), perm=[1, 0])
        else:
            weight = self.matmul_weight(g, module)
        y = g.op("MatMul", x, weight)
        if f"{module}.bias" in self.weights:
            y = g.op("Add", self.weight(g, f"{module}.bias"), y)
        return y

    def matmul_weight(self, g: GraphBuilder, module: str) -> str:
        """torch.onnx folds weight.t() into a new initializer named after the MatMul."""
        name = self._matmul_weights.get(module)
        if name is None:
            name = f"onnx::MatMul_{len(self._matmul_weights) + 1}"
            self._matmul_weights[module] = name
            g.initializer(name, self.weights[f"{module}.weight"].T)
        return name

    def prepare(self, g: GraphBuilder, trace: Trace) -> Shared:
        batch = dim(g, signature.INPUT_IDS, 0)
        seq = dim(g, signature.INPUT_IDS, 1)
        mask = self.causal_mask(g, batch, seq, trace)
        with g.scope("rotary_emb"):
            cos, sin = self.rope_tables(g, batch)
        return Shared(mask, cos, sin)

    def causal_mask(self, g: GraphBuilder, batch: str, seq: str, trace: Trace) -> str:
        total = dim(g, signature.ATTENTION_MASK, 1)
        past = dim(g, signature.past_key(0), 2) if trace.with_past else g.const(0)
        cache_position = g.op("Range", past, g.op("Add", past, seq), g.const(1))
        min_value = numpy_helper.from_array(np.array([F32_MIN], dtype=np.float32))
        causal = g.op("ConstantOfShape", shape_of(g, seq, total), value=min_value)
        if not trace.one_token:
            causal = g.op("Trilu", causal, g.const(1), upper=1)
        # Keys beyond each query's cache position stay masked; the rest become 0.
        beyond = g.op("Greater", g.op("Range", g.const(0), total, g.const(1)),
                      g.op("Reshape", cache_position, g.const([-1, 1])))
        causal = g.op("Mul", causal, g.op("Cast", beyond, to=TensorProto.FLOAT))
        causal = g.op("Expand", unsqueeze(g, causal, 0, 1), shape_of(g, batch, 1, 1, 1))
        padding = g.op("Cast", unsqueeze(g, signature.ATTENTION_MASK, 1, 2), to=TensorProto.FLOAT)
        padded = g.op("Equal", g.op("Add", causal, padding), g.const(0.0))
        return g.op("Where", padded, g.const(F32_MIN), causal)

    def rope_tables(self, g: GraphBuilder, batch: str) -> tuple[str, str]:
        c = self.config
        if self.options.rope_style == "cache":
            cos, sin = rope_cos_sin(c, np.arange(c.max_position_embeddings))
            return (g.op("Gather", g.initializer("model.rotary_emb.cos_cached", cos),
                         signature.POSITION_IDS),
                    g.op("Gather", g.initializer("model.rotary_emb.sin_cached", sin),
                         signature.POSITION_IDS))
        half = c.head_dim // 2
        inv_freq = g.op("Expand", g.const(rope_inv_freq(c)[None, :, None]),
                        shape_of(g, batch, half, 1))
        positions = g.op("Cast", unsqueeze(g, signature.POSITION_IDS, 1), to=TensorProto.FLOAT)
        freqs = g.op("Transpose", g.op("MatMul", inv_freq, positions), perm=[0, 2, 1])
        emb = g.op("Concat", freqs, freqs, axis=-1)
        # transformers multiplies by attention_scaling, 1.0 for the default rope.
        return (g.op("Mul", g.op("Cos", emb), g.const(1.0)),
                g.op("Mul", g.op("Sin", emb), g.const(1.0)))

    def attention(self, g: GraphBuilder, layer: int, x: str, shared: Shared,
                  trace: Trace) -> str:
        c = self.config
        module = f"{layer_prefix(layer)}.self_attn"
        batch, seq = dim(g, x, 0), dim(g, x, 1)
        projected = {}
        for name, heads in (("q", c.num_heads), ("k", c.num_kv_heads), ("v", c.num_kv_heads)):
            with g.scope(f"{name}_proj"):
                y = self.linear(g, x, f"{module}.{name}_proj")
            y = g.op("Reshape", y, shape_of(g, batch, seq, heads, c.head_dim))
            projected[name] = g.op("Transpose", y, perm=[0, 2, 1, 3])
        cos, sin = unsqueeze(g, shared.cos, 1), unsqueeze(g, shared.sin, 1)
        q = self.rotary(g, projected["q"], cos, sin)
        k = self.rotary(g, projected["k"], cos, sin)
        v = projected["v"]
        if trace.with_past:
            k = g.op("Concat", signature.past_key(layer), k, axis=-2)
            v = g.op("Concat", signature.past_value(layer), v, axis=-2)
        k = self.repeat_kv(g, g.rename(k, signature.present_key(layer)))
        v = self.repeat_kv(g, g.rename(v, signature.present_value(layer)))
        scores = g.op("MatMul", q, g.op("Transpose", k, perm=[0, 1, 3, 2]))
        scores = g.op("Add", g.op("Div", scores, g.const(math.sqrt(c.head_dim))), shared.mask)
        out = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        out = g.op("Reshape", g.op("Transpose", out, perm=[0, 2, 1, 3]),
                   shape_of(g, batch, seq, c.q_size))
        with g.scope("o_proj"):
            return self.linear(g, out, f"{module}.o_proj")

    def rotary(self, g: GraphBuilder, x: str, cos: str, sin: str) -> str:
        """x * cos + rotate_half(x) * sin, rotate_half(x) = cat(-x[..., half:], x[..., :half])."""
        half = self.config.head_dim // 2
        axis, step = g.const([3]), g.const([1])
        first = g.op("Slice", x, g.const([0]), g.const([half]), axis, step)
        second = g.op("Slice", x, g.const([half]), g.const([INT64_MAX]), axis, step)
        rotated = g.op("Concat", g.op("Neg", second), first, axis=-1)
        return g.op("Add", g.op("Mul", x, cos), g.op("Mul", rotated, sin))

    def repeat_kv(self, g: GraphBuilder, x: str) -> str:
        """[b, kv, s, d] -> [b, kv * n_rep, s, d] by Unsqueeze, Expand, Reshape."""
        c = self.config
        n_rep = c.num_heads // c.num_kv_heads
        if n_rep == 1:
            return x
        batch, length = dim(g, x, 0), dim(g, x, 2)
        expanded = g.op("Expand", unsqueeze(g, x, 2),
                        shape_of(g, batch, c.num_kv_heads, n_rep, length, c.head_dim))
        return g.op("Reshape", expanded, shape_of(g, batch, c.num_heads, length, c.head_dim))
