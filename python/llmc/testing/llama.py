"""Llama-architecture configuration, seeded random weights and an independent numpy forward.

Weights use Hugging Face names and layouts (Linear weights are [out_features, in_features]),
so the same dict can come from a real checkpoint or a converted GGUF file. The numpy forward
is the oracle every built ONNX model is checked against: float32 math with transformers'
semantics (rotate_half rope over cat(freqs, freqs), GQA by repeating K/V heads, causal plus
padding mask that adds finfo(float32).min).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

F32_MIN = np.finfo(np.float32).min


@dataclass
class LlamaConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int | None = None  # None: hidden_size // num_heads
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-5
    tie_word_embeddings: bool = False
    qkv_bias: bool = False  # Qwen2 puts biases on the q/k/v projections
    max_position_embeddings: int = 2048

    def __post_init__(self):
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_heads
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_heads {self.num_heads} is not a multiple of "
                             f"num_kv_heads {self.num_kv_heads}")
        if self.head_dim % 2:
            raise ValueError(f"rotary embedding needs an even head_dim, got {self.head_dim}")

    @property
    def q_size(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.num_kv_heads * self.head_dim

    def num_parameters(self) -> int:
        return sum(int(np.prod(shape)) for shape in weight_shapes(self).values())


def layer_prefix(i: int) -> str:
    return f"model.layers.{i}"


def weight_shapes(config: LlamaConfig) -> dict[str, tuple[int, ...]]:
    """Every weight's Hugging Face name and shape (Linear weights [out_features, in_features])."""
    c = config
    h = c.hidden_size
    shapes = {"model.embed_tokens.weight": (c.vocab_size, h)}
    for i in range(c.num_layers):
        p = layer_prefix(i)
        shapes[f"{p}.input_layernorm.weight"] = (h,)
        shapes[f"{p}.self_attn.q_proj.weight"] = (c.q_size, h)
        shapes[f"{p}.self_attn.k_proj.weight"] = (c.kv_size, h)
        shapes[f"{p}.self_attn.v_proj.weight"] = (c.kv_size, h)
        if c.qkv_bias:
            shapes[f"{p}.self_attn.q_proj.bias"] = (c.q_size,)
            shapes[f"{p}.self_attn.k_proj.bias"] = (c.kv_size,)
            shapes[f"{p}.self_attn.v_proj.bias"] = (c.kv_size,)
        shapes[f"{p}.self_attn.o_proj.weight"] = (h, c.q_size)
        shapes[f"{p}.post_attention_layernorm.weight"] = (h,)
        shapes[f"{p}.mlp.gate_proj.weight"] = (c.intermediate_size, h)
        shapes[f"{p}.mlp.up_proj.weight"] = (c.intermediate_size, h)
        shapes[f"{p}.mlp.down_proj.weight"] = (h, c.intermediate_size)
    shapes["model.norm.weight"] = (h,)
    if not c.tie_word_embeddings:
        shapes["lm_head.weight"] = (c.vocab_size, h)
    return shapes


def check_weights(config: LlamaConfig, weights: dict[str, np.ndarray]) -> None:
    """Raise ValueError unless `weights` holds every weight of `config` as float32 of the right
    shape (other entries, such as a checkpoint's rotary inv_freq buffers, are ignored)."""
    problems = []
    for name, shape in weight_shapes(config).items():
        w = weights.get(name)
        if w is None:
            problems.append(f"{name} missing")
        elif w.shape != shape or w.dtype != np.float32:
            problems.append(f"{name} is {w.dtype}{list(w.shape)}, expected float32{list(shape)}")
    if problems:
        raise ValueError("weights do not fit the config: " + "; ".join(problems))


# Gains of the seeded weights (std = gain / sqrt(fan_in)). Fixtures want every block to write
# into the residual stream at the embedding's order of magnitude (so layers matter and a tied
# lm_head does not just echo the input token), attention patterns far from uniform, and logits
# spread over several units so greedy top-2 margins are far above fp32 rounding; the final
# norm's gain sets that spread.
_GAINS = {"q_proj": 2.0, "k_proj": 2.0, "o_proj": 2.0, "down_proj": 2.0}
_FINAL_NORM_GAIN = 4.0
_BIAS_STD = 0.5


def random_weights(config: LlamaConfig, seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded float32 weights with Hugging Face names, scaled for test fixtures."""
    rng = np.random.default_rng(seed)
    weights = {}
    for name, shape in weight_shapes(config).items():
        module = name.rsplit(".", 2)[-2]
        if name.endswith("norm.weight"):
            gain = _FINAL_NORM_GAIN if name == "model.norm.weight" else 1.0
            w = gain * (1.0 + 0.1 * rng.standard_normal(shape))
        elif name.endswith(".bias"):
            w = rng.normal(0.0, _BIAS_STD, shape)
        else:
            w = rng.normal(0.0, _GAINS.get(module, 1.0) / np.sqrt(shape[1]), shape)
        weights[name] = w.astype(np.float32)
    return weights


def lm_head_weight(config: LlamaConfig, weights: dict[str, np.ndarray]) -> np.ndarray:
    """[vocab, hidden]: the embedding itself when the model ties them."""
    if config.tie_word_embeddings:
        return weights["model.embed_tokens.weight"]
    return weights["lm_head.weight"]


# ---------------------------------------------------------------------------------------------
# Reference forward


def default_position_ids(attention_mask: np.ndarray, seq_len: int) -> np.ndarray:
    """What transformers' generate() and optimum pass: cumsum(mask) - 1, 1 where masked."""
    positions = np.cumsum(attention_mask, axis=-1) - 1
    positions = np.where(attention_mask == 0, 1, positions)
    return positions[:, -seq_len:].astype(np.int64)


def rope_inv_freq(config: LlamaConfig) -> np.ndarray:
    """transformers' default rope: theta ** -(2i / head_dim), computed in float32."""
    d = config.head_dim
    exponent = np.arange(0, d, 2, dtype=np.int64).astype(np.float32) / np.float32(d)
    return (1.0 / (np.float32(config.rope_theta) ** exponent)).astype(np.float32)


def rope_cos_sin(config: LlamaConfig, position_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """cos, sin of shape [*position_ids.shape, head_dim] over cat(freqs, freqs)."""
    freqs = position_ids.astype(np.float32)[..., None] * rope_inv_freq(config)
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb), np.sin(emb)


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    variance = np.mean(x * x, axis=-1, keepdims=True)
    return weight * (x / np.sqrt(variance + np.float32(eps)))


def rotate_half(x: np.ndarray) -> np.ndarray:
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def silu(x: np.ndarray) -> np.ndarray:
    # sigmoid as 0.5 * (1 + tanh(x / 2)): no overflow for large negative x.
    return x * (0.5 * (1.0 + np.tanh(0.5 * x)))


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def causal_padding_mask(attention_mask: np.ndarray, seq_len: int) -> np.ndarray:
    """Additive [batch, 1, seq, total] mask as transformers builds it: 0 where a query may
    attend, finfo(float32).min above the diagonal and on padded keys."""
    total = attention_mask.shape[-1]
    past = total - seq_len
    query_pos = past + np.arange(seq_len)[:, None]
    allowed = np.arange(total)[None, :] <= query_pos  # [seq, total]
    allowed = allowed[None, None] & (attention_mask[:, None, None, :] != 0)
    return np.where(allowed, np.float32(0), F32_MIN).astype(np.float32)


def reference_forward(config: LlamaConfig, weights: dict[str, np.ndarray],
                      input_ids: np.ndarray, attention_mask: np.ndarray | None = None,
                      position_ids: np.ndarray | None = None,
                      past: list[tuple[np.ndarray, np.ndarray]] | None = None,
                      ) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Llama forward in float32.

    input_ids [batch, seq]; attention_mask [batch, past + seq] (default all ones);
    position_ids [batch, seq] (default cumsum(mask) - 1); past: per layer (key, value) of
    shape [batch, kv_heads, past, head_dim]. Returns logits [batch, seq, vocab] and present
    (past with this step's keys and values appended).
    """
    c = config
    input_ids = np.asarray(input_ids, dtype=np.int64)
    batch, seq = input_ids.shape
    past_len = past[0][0].shape[2] if past else 0
    if attention_mask is None:
        attention_mask = np.ones((batch, past_len + seq), dtype=np.int64)
    if position_ids is None:
        position_ids = default_position_ids(attention_mask, seq)
    mask = causal_padding_mask(attention_mask, seq)
    cos, sin = rope_cos_sin(c, position_ids)
    cos, sin = cos[:, None], sin[:, None]  # broadcast over heads
    n_rep = c.num_heads // c.num_kv_heads
    scale = np.float32(1.0 / np.sqrt(c.head_dim))

    def linear(x, name):
        y = x @ weights[f"{name}.weight"].T
        bias = weights.get(f"{name}.bias")
        return y if bias is None else y + bias

    def heads(x, n):  # [b, s, n * d] -> [b, n, s, d]
        return x.reshape(batch, seq, n, c.head_dim).transpose(0, 2, 1, 3)

    x = weights["model.embed_tokens.weight"][input_ids]
    present = []
    for i in range(c.num_layers):
        p = layer_prefix(i)
        h = rms_norm(x, weights[f"{p}.input_layernorm.weight"], c.rms_norm_eps)
        q = heads(linear(h, f"{p}.self_attn.q_proj"), c.num_heads)
        k = heads(linear(h, f"{p}.self_attn.k_proj"), c.num_kv_heads)
        v = heads(linear(h, f"{p}.self_attn.v_proj"), c.num_kv_heads)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if past:
            k = np.concatenate([past[i][0], k], axis=2)
            v = np.concatenate([past[i][1], v], axis=2)
        present.append((k, v))
        k_all, v_all = np.repeat(k, n_rep, axis=1), np.repeat(v, n_rep, axis=1)
        scores = (q @ k_all.transpose(0, 1, 3, 2)) * scale + mask
        attn = (softmax(scores) @ v_all).transpose(0, 2, 1, 3).reshape(batch, seq, c.q_size)
        x = x + linear(attn, f"{p}.self_attn.o_proj")
        h = rms_norm(x, weights[f"{p}.post_attention_layernorm.weight"], c.rms_norm_eps)
        mlp = silu(linear(h, f"{p}.mlp.gate_proj")) * linear(h, f"{p}.mlp.up_proj")
        x = x + linear(mlp, f"{p}.mlp.down_proj")
    x = rms_norm(x, weights["model.norm.weight"], c.rms_norm_eps)
    logits = x @ lm_head_weight(c, weights).T
    return logits.astype(np.float32), present
