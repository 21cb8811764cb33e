"""Run exported decoder models in onnxruntime: the reference llmc's runtime is checked against.

Handles every style's inputs: position_ids = cumsum(attention_mask) - 1 where the model takes
them, an empty past (zero-length sequence axis) for prefill, `use_cache_branch` for optimum's
merged decoder. Prompts of different lengths are padded on the left, except for models with
GroupQueryAttention, which reads each sequence's length from the mask and needs the valid
tokens first (right padding). A GroupQueryAttention layer with `sliding_window_cache` (the genai
builder's Gemma-2) keeps its past as a ring of the window's last keys: its empty past is that
ring, zeroed, and prompts of different lengths are prefilled one at a time, as onnxruntime
refuses them padded together there.

    logits = prefill_and_decode("model.onnx", [[1, 2, 3], [4, 5]], steps=8)
    tokens = greedy("model.onnx", [[1, 2, 3], [4, 5]], steps=8)
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

from . import signature
from .llama import default_position_ids

PAD_TOKEN = 0


def use_exact_kernels() -> None:
    """Has this process's onnxruntime compute its ops' exact semantics where a kernel would
    otherwise trade accuracy for speed on its own: the CPU QMoE multiplies 8-bit experts
    quantized by blocks with int8-quantized activations unless ORT_QMOE_CPU_QNBIT_GEMM says
    fp32 (about 1e-2 off the exact product, the latitude of MatMulNBits' accuracy_level 4).
    For the tests' references, set before any session; benchmarks run onnxruntime as users do."""
    os.environ["ORT_QMOE_CPU_QNBIT_GEMM"] = "fp32"


@dataclass
class PaddedPrompts:
    input_ids: np.ndarray  # int64 [batch, longest]
    attention_mask: np.ndarray  # int64 [batch, longest]
    lengths: list[int]
    side: str  # "left" or "right"

    def positions(self, index: int) -> slice:
        """Where prompt `index`'s tokens are along the sequence axis."""
        longest = self.input_ids.shape[1]
        length = self.lengths[index]
        return slice(longest - length, longest) if self.side == "left" else slice(0, length)

    def last_positions(self) -> np.ndarray:
        return np.array([self.positions(i).stop - 1 for i in range(len(self.lengths))])


def pad(prompts: list[list[int]], side: str) -> PaddedPrompts:
    if side not in ("left", "right"):
        raise ValueError(f"padding side must be 'left' or 'right', not {side!r}")
    lengths = [len(p) for p in prompts]
    if min(lengths) == 0:
        raise ValueError("empty prompt")
    longest = max(lengths)
    input_ids = np.full((len(prompts), longest), PAD_TOKEN, dtype=np.int64)
    attention_mask = np.zeros((len(prompts), longest), dtype=np.int64)
    padded = PaddedPrompts(input_ids, attention_mask, lengths, side)
    for i, prompt in enumerate(prompts):
        input_ids[i, padded.positions(i)] = prompt
        attention_mask[i, padded.positions(i)] = 1
    return padded


@dataclass
class Generation:
    """A batch being generated: its padded prompts, the tokens and the KV cache so far."""

    prompts: PaddedPrompts
    attention_mask: np.ndarray  # [batch, tokens so far]
    past: dict[str, np.ndarray]  # past input name -> [batch, kv_heads, tokens so far, head_dim]
    # [batch, tokens so far]: what a model without a cache is fed again at every step.
    input_ids: np.ndarray


def sliding_window(model_path: str | os.PathLike) -> int:
    """The `sliding_window` of the config.json beside the model."""
    config_path = Path(model_path).parent / "config.json"
    window = json.loads(config_path.read_text()).get("sliding_window") if config_path.exists() \
        else None
    if not isinstance(window, int):
        raise ValueError(f"{model_path}: a scalar past input needs the model's sliding_window, "
                         f"which {config_path} does not give")
    return window


def genai_decoder_config(model_path: str | os.PathLike) -> dict:
    """The `model.decoder` section of the genai_config.json beside an onnxruntime-genai model."""
    config_path = Path(model_path).parent / "genai_config.json"
    if not config_path.exists():
        raise ValueError(f"{model_path}: the past KV inputs' head count and size are not static "
                         "and there is no genai_config.json beside the model to read them from")
    return json.loads(config_path.read_text())["model"]["decoder"]


class OrtDecoder:
    """One exported decoder model in an onnxruntime session."""

    def __init__(self, model_path: str | os.PathLike, providers=("CPUExecutionProvider",),
                 session_options: ort.SessionOptions | None = None):
        session_options = session_options or ort.SessionOptions()
        # onnxruntime fuses a MatMul by a blocked DequantizeLinear into MatMulNBits at
        # accuracy_level 4 (int8 activations) unless told otherwise: keep the exact product.
        session_options.add_session_config_entry("session.qdq_matmulnbits_accuracy_level", "0")
        self.session = ort.InferenceSession(str(model_path), sess_options=session_options,
                                            providers=list(providers))
        inputs = {i.name: i for i in self.session.get_inputs()}
        self.past_names = [name for name in inputs if name.startswith("past_key_values.")]
        # The present KV outputs, in the order of the past inputs: `present.*` (optimum,
        # genai) or every output after the logits (torch.onnx's dynamo export: `cache.*`).
        self.present_names = [o.name for o in self.session.get_outputs()
                              if o.name.startswith("present.")]
        if not self.present_names:
            self.present_names = [o.name for o in self.session.get_outputs()
                                  if o.name != signature.LOGITS]
        # [batch, kv_heads, past_sequence, head_dim]: the static dims size an empty past
        # (each input its own: multi-head latent attention's values are narrower than its
        # keys); onnxruntime-genai's builder names head_dim ('kv_cache_dim') and says it in
        # genai_config.json.
        self.past_dims = {}
        # Scalars among the past inputs, fed back as the model returns them: transformers 5's
        # sliding-window cache passes its window size through (`past_key_values.layers.N.
        # _sliding_window_tensor` -> `cache.layers.N._sliding_window_tensor`).
        self.past_scalars = {}
        for name in self.past_names:
            if len(inputs[name].shape) == 0:
                self.past_scalars[name] = np.array(sliding_window(model_path), dtype=np.int64)
                continue
            # torch.onnx's dynamo export names even static dims ('2'): a number is the size.
            dims = tuple(int(d) if isinstance(d, str) and d.isdigit() else d
                         for d in (inputs[name].shape[1], inputs[name].shape[3]))
            if not all(isinstance(d, int) for d in dims):
                decoder = genai_decoder_config(model_path)
                dims = (decoder["num_key_value_heads"], decoder["head_size"])
            self.past_dims[name] = dims
        # A model exported without its cache (optimum's --task text-generation) recomputes
        # every token at every step.
        self.past_dtype = np.float16 if self.past_names and \
            inputs[self.past_names[0]].type == "tensor(float16)" else np.float32
        self.takes_position_ids = signature.POSITION_IDS in inputs
        self.merged = signature.USE_CACHE_BRANCH in inputs
        nodes = onnx.load(str(model_path), load_external_data=False).graph.node
        graph_ops = {node.op_type for node in nodes}
        self.padding_side = "right" if "GroupQueryAttention" in graph_ops else "left"
        # past input name -> the ring's length, for the layers that keep a sliding-window cache.
        self.ring_lengths = {}
        for node in nodes:
            attributes = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            if node.op_type == "GroupQueryAttention" and attributes.get("sliding_window_cache"):
                for past_name in node.input[3:5]:
                    self.ring_lengths[past_name] = attributes["local_window_size"]

    def feeds(self, input_ids: np.ndarray, attention_mask: np.ndarray,
              past: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
        """The inputs of one model call (an empty past when `past` is None)."""
        input_ids = np.asarray(input_ids, dtype=np.int64)
        batch, seq = input_ids.shape
        if past is None:
            past = {name: np.zeros((batch, kv_heads, self.ring_lengths.get(name, 0), head_dim),
                                   dtype=self.past_dtype)
                    for name, (kv_heads, head_dim) in self.past_dims.items()}
            past.update(self.past_scalars)
        feeds = {signature.INPUT_IDS: input_ids,
                 signature.ATTENTION_MASK: np.asarray(attention_mask, dtype=np.int64), **past}
        if self.takes_position_ids:
            feeds[signature.POSITION_IDS] = default_position_ids(attention_mask, seq)
        if self.merged:
            past_length = next(iter(past.values())).shape[2]
            feeds[signature.USE_CACHE_BRANCH] = np.array([past_length > 0])
        return feeds

    def forward(self, input_ids: np.ndarray, attention_mask: np.ndarray,
                past: dict[str, np.ndarray] | None = None,
                ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """One model call. Returns logits [batch, seq, vocab] and the present KV, keyed by the
        past input names that take it back."""
        feeds = self.feeds(input_ids, attention_mask, past)
        outputs = dict(zip([o.name for o in self.session.get_outputs()],
                           self.session.run(None, feeds)))
        present = {past_name: outputs[present_name]
                   for past_name, present_name in zip(self.past_names, self.present_names)}
        return outputs[signature.LOGITS], present

    def prefill(self, prompts: list[list[int]]) -> tuple[np.ndarray, Generation]:
        """Run the padded prompts; logits [batch, longest, vocab] (see Generation.prompts for
        where each prompt's tokens are)."""
        padded = pad(prompts, self.padding_side)
        if self.ring_lengths and len(set(padded.lengths)) > 1:
            return self.prefill_one_at_a_time(padded)
        logits, present = self.forward(padded.input_ids, padded.attention_mask)
        return logits, Generation(padded, padded.attention_mask, present, padded.input_ids)

    def prefill_one_at_a_time(self, padded: PaddedPrompts) -> tuple[np.ndarray, Generation]:
        """prefill() of right-padded prompts, each run alone: the logits and the present KV
        put together as one padded batch would have them."""
        runs = [self.forward(padded.input_ids[i:i + 1, padded.positions(i)],
                             padded.attention_mask[i:i + 1, padded.positions(i)])
                for i in range(len(padded.lengths))]
        logits = np.zeros((len(runs), padded.input_ids.shape[1], runs[0][0].shape[2]),
                          dtype=runs[0][0].dtype)
        for i, (run_logits, _) in enumerate(runs):
            logits[i, padded.positions(i)] = run_logits[0]
        present = {}
        for name in self.past_names:
            caches = [run_present[name] for _, run_present in runs]
            longest = max(cache.shape[2] for cache in caches)
            present[name] = np.concatenate(
                [np.pad(cache, ((0, 0), (0, 0), (0, longest - cache.shape[2]), (0, 0)))
                 for cache in caches])
        return logits, Generation(padded, padded.attention_mask, present, padded.input_ids)

    def decode(self, generation: Generation, tokens) -> np.ndarray:
        """Feed one token per sequence; returns logits [batch, vocab] and advances `generation`."""
        tokens = np.asarray(tokens, dtype=np.int64).reshape(-1, 1)
        mask = np.concatenate([generation.attention_mask, np.ones_like(tokens)], axis=1)
        input_ids = np.concatenate([generation.input_ids, tokens], axis=1)
        logits, present = self.forward(input_ids if not self.past_names else tokens, mask,
                                       generation.past)
        generation.attention_mask, generation.past = mask, present
        generation.input_ids = input_ids
        return logits[:, -1]


def prefill_and_decode(model_path: str | os.PathLike, prompt_ids: list[list[int]],
                       steps: int) -> list[np.ndarray]:
    """Greedy generation of `steps` tokens per prompt; the next-token logits [batch, vocab] of
    each step: from the prefill, then from each decode step fed the previous greedy token."""
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    decoder = OrtDecoder(model_path)
    logits, generation = decoder.prefill(prompt_ids)
    step_logits = [logits[np.arange(len(prompt_ids)), generation.prompts.last_positions()]]
    while len(step_logits) < steps:
        step_logits.append(decoder.decode(generation, step_logits[-1].argmax(axis=-1)))
    return step_logits


def greedy(model_path: str | os.PathLike, prompt_ids: list[list[int]],
           steps: int) -> list[list[int]]:
    """The `steps` greedy tokens generated after each prompt."""
    logits = prefill_and_decode(model_path, prompt_ids, steps)
    return np.stack([step.argmax(axis=-1) for step in logits], axis=1).tolist()
