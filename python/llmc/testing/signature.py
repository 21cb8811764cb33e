"""Input and output names of exported decoders, as optimum and onnxruntime-genai write them."""
from __future__ import annotations

import numpy as np

from .graph import GraphBuilder
from .llama import LlamaConfig

INPUT_IDS = "input_ids"
ATTENTION_MASK = "attention_mask"
POSITION_IDS = "position_ids"
USE_CACHE_BRANCH = "use_cache_branch"  # optimum's merged decoder
LOGITS = "logits"

# Symbolic dimensions. optimum spells the total length as a sum, onnxruntime-genai names it.
BATCH = "batch_size"
SEQUENCE = "sequence_length"
PAST_SEQUENCE = "past_sequence_length"
OPTIMUM_TOTAL_SEQUENCE = "past_sequence_length + sequence_length"
GENAI_TOTAL_SEQUENCE = "total_sequence_length"


def past_key(layer: int) -> str:
    return f"past_key_values.{layer}.key"


def past_value(layer: int) -> str:
    return f"past_key_values.{layer}.value"


def present_key(layer: int) -> str:
    return f"present.{layer}.key"


def present_value(layer: int) -> str:
    return f"present.{layer}.value"


def declare(g: GraphBuilder, config: LlamaConfig, *, total_sequence: str,
            position_ids: bool = True, use_cache_branch: bool = False) -> None:
    """Declare the decoder's graph inputs and outputs on the main graph."""
    c = config
    g.input(INPUT_IDS, np.int64, [BATCH, SEQUENCE])
    g.input(ATTENTION_MASK, np.int64, [BATCH, total_sequence])
    if position_ids:
        g.input(POSITION_IDS, np.int64, [BATCH, SEQUENCE])
    for i in range(c.num_layers):
        for name in (past_key(i), past_value(i)):
            g.input(name, np.float32, [BATCH, c.num_kv_heads, PAST_SEQUENCE, c.head_dim])
    if use_cache_branch:
        g.input(USE_CACHE_BRANCH, np.bool_, [1])
    g.output(LOGITS, np.float32, [BATCH, SEQUENCE, c.vocab_size])
    for i in range(c.num_layers):
        for name in (present_key(i), present_value(i)):
            g.output(name, np.float32, [BATCH, c.num_kv_heads, total_sequence, c.head_dim])
