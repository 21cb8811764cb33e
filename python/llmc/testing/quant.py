"""Blockwise int4 weight quantization in the layout of onnxruntime's MatMulNBits.

A Linear weight [N=out_features, K=in_features] is cut along K into blocks of `block_size`
(the last block zero-padded). Each block has a float scale and a 4-bit zero point, and
dequantizes as (q - zero_point) * scale. Packing follows onnxruntime's quantizer:

- B: uint8 [N, K/block, block/2], two values per byte, low nibble first;
- scales: float32 [N, K/block];
- zero points: uint8 [N, ceil((K/block)/2)], packed the same way, or absent when symmetric
  (the default zero point is 8).

GatherBlockQuantized reads the same bytes as [N, K/2] when K is a multiple of the block, which
is how a tied embedding shares the lm_head's quantized weight.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BITS = 4
LEVELS = (1 << BITS) - 1
SYMMETRIC_ZERO_POINT = 1 << (BITS - 1)


@dataclass
class Int4Weight:
    packed: np.ndarray  # uint8 [N, blocks, block_size // 2]
    scales: np.ndarray  # float32 [N, blocks]
    zero_points: np.ndarray | None  # uint8 [N, ceil(blocks / 2)]; None: symmetric
    in_features: int  # K
    block_size: int

    @property
    def out_features(self) -> int:
        return self.packed.shape[0]

    def levels(self) -> np.ndarray:
        """The 4-bit values, [N, blocks, block_size]."""
        return unpack_nibbles(self.packed)

    def block_zero_points(self) -> np.ndarray:
        """Zero point of every block, [N, blocks]."""
        blocks = self.scales.shape[1]
        if self.zero_points is None:
            return np.full(self.scales.shape, SYMMETRIC_ZERO_POINT, dtype=np.uint8)
        return unpack_nibbles(self.zero_points)[:, :blocks]

    def dequantize(self) -> np.ndarray:
        """The float32 weight [N, K] the quantized operators compute with."""
        q = self.levels().astype(np.float32) - self.block_zero_points()[..., None]
        w = q * self.scales[..., None]
        return w.reshape(self.out_features, -1)[:, :self.in_features]


def unpack_nibbles(packed: np.ndarray) -> np.ndarray:
    """uint8 [..., n] -> uint8 [..., 2n], low nibble first."""
    return np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(*packed.shape[:-1], -1)


def pack_nibbles(values: np.ndarray) -> np.ndarray:
    """uint8 values < 16, [..., n] -> [..., ceil(n/2)], low nibble first (odd n padded with 0)."""
    if values.shape[-1] % 2:
        values = np.concatenate([values, np.zeros_like(values[..., :1])], axis=-1)
    return (values[..., 0::2] | (values[..., 1::2] << 4)).astype(np.uint8)


def quantize_int4(weight: np.ndarray, block_size: int = 32, symmetric: bool = True) -> Int4Weight:
    """Round-to-nearest quantization of a [N, K] float weight, as onnxruntime's quantizer does:
    symmetric blocks map the value of largest magnitude to -8; asymmetric blocks span
    [min(x, 0), max(x, 0)] with a rounded zero point."""
    if block_size < 16 or block_size & (block_size - 1):
        raise ValueError(f"block_size must be a power of two >= 16, got {block_size}")
    n, k = weight.shape
    blocks = -(-k // block_size)
    padded = np.zeros((n, blocks * block_size), dtype=np.float32)
    padded[:, :k] = weight
    x = padded.reshape(n, blocks, block_size)

    if symmetric:
        index = np.argmax(np.abs(x), axis=-1)[..., None]
        extreme = np.take_along_axis(x, index, axis=-1)[..., 0]
        scales = extreme / -SYMMETRIC_ZERO_POINT
        zero = np.full((n, blocks), SYMMETRIC_ZERO_POINT, dtype=np.float32)
    else:
        low = np.minimum(x.min(axis=-1), 0.0)
        high = np.maximum(x.max(axis=-1), 0.0)
        scales = (high - low) / LEVELS
        safe = np.where(scales == 0, 1.0, scales)
        zero = np.where(scales == 0, 0.0, np.clip(np.round(-low / safe), 0, LEVELS))
    scales = scales.astype(np.float32)
    reciprocal = np.where(scales == 0, 0.0, 1.0 / np.where(scales == 0, 1.0, scales))
    levels = np.clip(np.round(x * reciprocal[..., None] + zero[..., None]), 0, LEVELS)
    levels = levels.astype(np.uint8)
    return Int4Weight(
        packed=pack_nibbles(levels),
        scales=scales,
        zero_points=None if symmetric else pack_nibbles(zero.astype(np.uint8)),
        in_features=k,
        block_size=block_size,
    )
