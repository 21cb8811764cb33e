"""GPTQ (Frantar et al., 2022): quantize a weight's columns one at a time, each time spreading
the rounding error over the columns not yet quantized, weighted by the inverse Hessian of the
layer's reconstruction error on calibration inputs (H = 2 X^T X).

Columns are processed in order, or with act-order in order of decreasing Hessian diagonal
(the inputs with the most energy first, while the most columns are left to absorb their
error); groups are then consecutive columns of that order, recorded per input feature in
g_idx, which MatMulNBits takes and llmc imports. Lazy batches of 128 carry each batch's
error to the later columns in one product. A group's scale
and zero point are chosen from its columns as updated when the group starts (groups divide
the batch, so a group never straddles two). Dead inputs (zero on every calibration token) are
zeroed in the weight; the Hessian's diagonal is damped by 10% of its mean. (The paper's 1%
assumes 128 x 2048 calibration tokens; on the ~2k tokens of the shipped text, 10% gives lower
perplexity and KL on SmolLM2-135M: bench/RESULTS.md.)
"""
from __future__ import annotations

import numpy as np

from .blocks import QuantizedWeight, check_grid, codes_on, from_codes, grid, pack_codes

BATCH = 128
DAMPING = 0.1


def quantize_gptq(weight: np.ndarray, hessian: np.ndarray, bits: int = 4, block_size: int = 32,
                  symmetric: bool = True, act_order: bool = False) -> QuantizedWeight:
    """GPTQ of a [N, K] weight given the [K, K] Hessian of its input."""
    if not act_order:
        return _quantize_in_order(weight, hessian, bits, block_size, symmetric)
    n, k = weight.shape
    order = np.argsort(-np.diag(hessian), kind="stable")
    permuted = _quantize_in_order(weight[:, order], hessian[np.ix_(order, order)], bits,
                                  block_size, symmetric)
    # Back to the features' own order: column order[i] holds the code quantized i-th, in
    # group i // block_size.
    codes = np.zeros((n, permuted.scales.shape[1] * block_size), dtype=np.uint8)
    codes[:, order] = permuted.levels().reshape(n, -1)[:, :k]
    group_index = np.empty(k, dtype=np.int32)
    group_index[order] = np.arange(k) // block_size
    return QuantizedWeight(packed=pack_codes(codes.reshape(n, -1, block_size), bits),
                           scales=permuted.scales, zero_points=permuted.zero_points,
                           in_features=k, block_size=block_size, bits=bits,
                           group_index=group_index)


def _quantize_in_order(weight: np.ndarray, hessian: np.ndarray, bits: int, block_size: int,
                       symmetric: bool) -> QuantizedWeight:
    check_grid(bits, block_size)
    n, k = weight.shape
    blocks = -(-k // block_size)
    padded_k = blocks * block_size
    w = np.zeros((n, padded_k), dtype=np.float64)
    w[:, :k] = weight
    h = np.zeros((padded_k, padded_k), dtype=np.float64)
    h[:k, :k] = hessian
    dead = np.diag(h) == 0
    h[dead, dead] = 1.0
    w[:, dead] = 0.0
    h[np.diag_indices(padded_k)] += DAMPING * np.mean(np.diag(h))
    # The upper Cholesky factor of H^-1: row i holds the weights of column i's error on the
    # later columns.
    inverse = np.linalg.cholesky(np.linalg.inv(h)).T

    codes = np.zeros((n, padded_k), dtype=np.float32)
    scales = np.zeros((n, blocks), dtype=np.float32)
    zeros = np.zeros((n, blocks), dtype=np.float32)
    batch = max(BATCH, block_size)
    for start in range(0, padded_k, batch):
        end = min(start + batch, padded_k)
        part = w[:, start:end].copy()
        errors = np.zeros_like(part)
        local = inverse[start:end, start:end]
        for i in range(end - start):
            column = start + i
            if column % block_size == 0:
                group = column // block_size
                scale, zero = grid(part[:, i:i + block_size][:, None, :].astype(np.float32),
                                   bits, symmetric)
                scales[:, group], zeros[:, group] = scale[:, 0], zero[:, 0]
            group = column // block_size
            code = codes_on(part[:, i], scales[:, group], zeros[:, group], bits)
            codes[:, column] = code
            quantized = (code - zeros[:, group]) * scales[:, group]
            error = (part[:, i] - quantized) / local[i, i]
            part[:, i:] -= np.outer(error, local[i, i:])
            errors[:, i] = error
        w[:, end:] -= errors @ inverse[start:end, end:]
    return from_codes(codes.reshape(n, blocks, block_size), scales, zeros, k, block_size, bits,
                      symmetric)
