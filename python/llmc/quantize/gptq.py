"""GPTQ (Frantar et al., 2022): quantize a weight's columns one at a time, each time spreading
the rounding error over the columns not yet quantized, weighted by the inverse Hessian of the
layer's reconstruction error on calibration inputs (H = 2 X^T X).

Columns are processed in order (no act-order: that needs g_idx, which llmc does not import),
in lazy batches of 128 whose error reaches the later columns in one product. A group's scale
and zero point are chosen from its columns as updated when the group starts (groups divide
the batch, so a group never straddles two). Dead inputs (zero on every calibration token) are
zeroed in the weight; the Hessian's diagonal is damped by 10% of its mean. (The paper's 1%
assumes 128 x 2048 calibration tokens; on the ~2k tokens of the shipped text, 10% gives lower
perplexity and KL on SmolLM2-135M: bench/RESULTS.md.)
"""
from __future__ import annotations

import numpy as np

from .blocks import QuantizedWeight, check_grid, codes_on, from_codes, grid

BATCH = 128
DAMPING = 0.1


def quantize_gptq(weight: np.ndarray, hessian: np.ndarray, bits: int = 4, block_size: int = 32,
                  symmetric: bool = True) -> QuantizedWeight:
    """GPTQ of a [N, K] weight given the [K, K] Hessian of its input."""
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
