"""Blockwise int4 weights for the fixture builders, in the layout of onnxruntime's MatMulNBits.

The quantizer is llmc.quantize's round to nearest at 4 bits (its docstring has the layout).
GatherBlockQuantized reads the same bytes as [N, K/2] when K is a multiple of the block, which
is how a tied embedding shares the lm_head's quantized weight.
"""
from __future__ import annotations

import numpy as np

from llmc.quantize import QuantizedWeight, quantize_rtn

Int4Weight = QuantizedWeight


def quantize_int4(weight: np.ndarray, block_size: int = 32, symmetric: bool = True) -> Int4Weight:
    """Round-to-nearest 4-bit quantization of a [N, K] float weight (llmc.quantize.quantize_rtn)."""
    return quantize_rtn(weight, 4, block_size, symmetric)
