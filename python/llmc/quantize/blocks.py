"""Block-wise weight quantization in the layout of onnxruntime's MatMulNBits.

A weight [N, K] is cut along K into blocks of `block_size` (the last one zero-padded); each
block has a float scale and, unless symmetric, an integer zero point, and dequantizes as
(code - zero_point) * scale. The grid is onnxruntime's quantizer's: symmetric blocks map the
value of largest magnitude to -2^(bits-1) and have no zero points (the default, 2^(bits-1),
applies); asymmetric blocks span [min(x, 0), max(x, 0)] with a rounded zero point.

Layouts: codes uint8 [N, blocks, block_size * bits / 8], two 4-bit codes a byte low nibble
first; scales float32 [N, blocks]; zero points uint8 [N, ceil(blocks * bits / 8)], packed
like the codes. GatherBlockQuantized reads the same codes as uint8 [N, K / 2].
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class QuantizedWeight:
    """A [N, K] weight in MatMulNBits' layout."""

    packed: np.ndarray  # uint8 [N, blocks, block_size * bits / 8]
    scales: np.ndarray  # float32 [N, blocks]
    zero_points: np.ndarray | None  # uint8 [N, ceil(blocks * bits / 8)]; None: symmetric
    in_features: int  # K
    block_size: int
    bits: int = 4
    # int32 [K]: the group (scale and zero point) of each input feature, MatMulNBits' g_idx;
    # None: feature k is in group k // block_size. GPTQ's act-order scatters the groups.
    group_index: np.ndarray | None = None

    @property
    def out_features(self) -> int:
        return self.packed.shape[0]

    def levels(self) -> np.ndarray:
        """The codes, uint8 [N, blocks, block_size]."""
        return unpack_codes(self.packed, self.bits)

    def block_zero_points(self) -> np.ndarray:
        """Zero point of every block, uint8 [N, blocks]."""
        blocks = self.scales.shape[1]
        if self.zero_points is None:
            return np.full(self.scales.shape, 1 << (self.bits - 1), dtype=np.uint8)
        return unpack_codes(self.zero_points, self.bits)[:, :blocks]

    def dequantize(self) -> np.ndarray:
        """The float32 weight [N, K] the quantized operators compute with."""
        if self.group_index is not None:
            codes = self.levels().reshape(self.out_features, -1)[:, :self.in_features]
            zeros = self.block_zero_points()[:, self.group_index].astype(np.float32)
            return (codes.astype(np.float32) - zeros) * self.scales[:, self.group_index]
        q = self.levels().astype(np.float32) - self.block_zero_points()[..., None]
        w = q * self.scales[..., None]
        return w.reshape(self.out_features, -1)[:, :self.in_features]


def unpack_codes(packed: np.ndarray, bits: int) -> np.ndarray:
    """uint8 [..., n] -> the codes: [..., 2n] low nibble first for 4 bits, as is for 8."""
    if bits == 8:
        return packed
    return np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(*packed.shape[:-1], -1)


def pack_codes(values: np.ndarray, bits: int) -> np.ndarray:
    """Codes [..., n] -> uint8 [..., ceil(n * bits / 8)], two 4-bit codes a byte low first."""
    values = values.astype(np.uint8)
    if bits == 8:
        return values
    if values.shape[-1] % 2:
        values = np.concatenate([values, np.zeros_like(values[..., :1])], axis=-1)
    return (values[..., 0::2] | (values[..., 1::2] << 4)).astype(np.uint8)


def check_grid(bits: int, block_size: int) -> None:
    if bits not in (4, 8):
        raise ValueError(f"bits must be 4 or 8, got {bits}")
    if block_size < 16 or block_size & (block_size - 1):
        raise ValueError(f"the group size must be a power of two >= 16, got {block_size}")


def grid(groups: np.ndarray, bits: int, symmetric: bool) -> tuple[np.ndarray, np.ndarray]:
    """The scale and zero point (as float) of each group: groups [..., size] -> [...] each."""
    levels_max = (1 << bits) - 1
    if symmetric:
        index = np.argmax(np.abs(groups), axis=-1)[..., None]
        extreme = np.take_along_axis(groups, index, axis=-1)[..., 0]
        scales = extreme / -(1 << (bits - 1))
        zero = np.full(scales.shape, 1 << (bits - 1), dtype=np.float32)
    else:
        low = np.minimum(groups.min(axis=-1), 0.0)
        high = np.maximum(groups.max(axis=-1), 0.0)
        scales = (high - low) / levels_max
        safe = np.where(scales == 0, 1.0, scales)
        zero = np.where(scales == 0, 0.0, np.clip(np.round(-low / safe), 0, levels_max))
    return scales.astype(np.float32), zero.astype(np.float32)


def codes_on(values: np.ndarray, scales: np.ndarray, zero: np.ndarray, bits: int) -> np.ndarray:
    """The codes of `values` on a grid (scales and zero broadcast against them)."""
    reciprocal = np.where(scales == 0, 0.0, 1.0 / np.where(scales == 0, 1.0, scales))
    return np.clip(np.round(values * reciprocal + zero), 0, (1 << bits) - 1)


def from_codes(codes: np.ndarray, scales: np.ndarray, zero: np.ndarray, in_features: int,
               block_size: int, bits: int, symmetric: bool) -> QuantizedWeight:
    """A QuantizedWeight from codes [N, blocks, block_size] and the grid [N, blocks]."""
    return QuantizedWeight(packed=pack_codes(codes, bits), scales=scales.astype(np.float32),
                           zero_points=None if symmetric else pack_codes(zero, bits),
                           in_features=in_features, block_size=block_size, bits=bits)


def padded_groups(weight: np.ndarray, block_size: int) -> np.ndarray:
    """[N, K] -> [N, blocks, block_size], the last block zero-padded."""
    n, k = weight.shape
    blocks = -(-k // block_size)
    padded = np.zeros((n, blocks * block_size), dtype=np.float32)
    padded[:, :k] = weight
    return padded.reshape(n, blocks, block_size)


def quantize_rtn(weight: np.ndarray, bits: int = 4, block_size: int = 32,
                 symmetric: bool = True) -> QuantizedWeight:
    """Round-to-nearest quantization of a [N, K] float weight."""
    check_grid(bits, block_size)
    groups = padded_groups(weight, block_size)
    scales, zero = grid(groups, bits, symmetric)
    codes = codes_on(groups, scales[..., None], zero[..., None], bits)
    return from_codes(codes, scales, zero, weight.shape[1], block_size, bits, symmetric)
