"""AWQ (Lin et al., 2023): scale each input channel of a weight before rounding it, by how
large that channel's activations are, so the channels that matter most lose the least.

The weights that read one activation (q/k/v; gate/up; down; the LM head) share a scale per
input channel, s = m^a with m the channel's mean magnitude on the calibration text,
normalised so that max(s) * min(s) = 1; the exponent a in 0, 0.05, ..., 0.95 is the one whose
round-to-nearest weights W * s, applied to the calibration rows divided by s, reproduce the
rows' product with W best (least squares). The division is folded into what computes the
activation, so the model's function does not change: a norm's weight (Mul by a 1-D
initializer), or the rows of the up projection whose product the activation is (Mul of
silu(gate) and up). An activation that has neither (attention's output, before o_proj) keeps
s = 1: its weights are rounded as they are.
"""
from __future__ import annotations

import numpy as np

from .blocks import quantize_rtn
from .calibration import ActivationStats
from .graph import ModelGraph, WeightSite

EXPONENTS = np.arange(20) / 20


def search_scales(weights: list[np.ndarray], stats: ActivationStats, bits: int, block_size: int,
                  symmetric: bool) -> np.ndarray:
    """The per-channel scale of the weights [N, K] that read one activation."""
    x = stats.sample().astype(np.float64)
    magnitude = np.maximum(stats.mean_magnitude(), 1e-8)
    references = [x @ w.T for w in weights]
    best_loss, best = np.inf, np.ones_like(magnitude)
    for exponent in EXPONENTS:
        scales = magnitude ** exponent
        scales = scales / np.sqrt(scales.max() * scales.min())
        loss = 0.0
        for w, reference in zip(weights, references):
            quantized = quantize_rtn((w * scales).astype(np.float32), bits, block_size,
                                     symmetric).dequantize()
            loss += float(np.sum(((x / scales) @ quantized.T.astype(np.float64)
                                  - reference) ** 2))
        if loss < best_loss:
            best_loss, best = loss, scales
    return best


def _consumers(graph: ModelGraph, name: str) -> list:
    return [node for node in graph.graph.node if name in node.input]


def _fold(graph: ModelGraph, activation: str, sites: list[WeightSite],
          by_output: dict[str, WeightSite]):
    """A function that divides the activation's channels by scales where it is computed, or
    None when nothing can take the division."""
    readers = {id(site.node) for site in sites}
    if any(id(node) not in readers and node.op_type != "Shape"
           for node in _consumers(graph, activation)):
        return None  # the activation's values go elsewhere too
    producer = graph.producers.get(activation)
    if producer is None or producer.op_type != "Mul":
        return None
    k = sites[0].weight.shape[1]
    for position, operand in enumerate(producer.input):
        gamma = graph.constant(operand)
        if gamma is not None and gamma.shape == (k,) and gamma.dtype == np.float32:
            # A copy of its own: exporters share equal initializers between norms.
            def divide_gamma(scales, position=position, gamma=gamma):
                producer.input[position] = graph.add_array(f"{activation}_awq_weight",
                                                           gamma / scales)
            return divide_gamma
    for operand in producer.input:
        up = by_output.get(operand)
        if up is not None and len(_consumers(graph, operand)) == 1:
            def divide_rows(scales, site=up):
                site.weight = (site.weight / scales[:, None]).astype(np.float32)
            return divide_rows
    return None


def apply_awq(graph: ModelGraph, sites: list[WeightSite], stats: dict[str, ActivationStats],
              bits: int, block_size: int, symmetric: bool, progress=None) -> int:
    """Scales the MatMul sites' weights in place and folds the division into the graph;
    returns how many activations were scaled."""
    by_output = {site.node.output[0]: site for site in sites}
    groups: dict[str, list[WeightSite]] = {}
    for site in sites:
        groups.setdefault(site.input, []).append(site)
    scaled = 0
    for index, (activation, readers) in enumerate(groups.items()):
        fold = _fold(graph, activation, readers, by_output)
        if fold is not None:
            scales = search_scales([site.weight for site in readers], stats[activation], bits,
                                   block_size, symmetric)
            for site in readers:
                site.weight = (site.weight * scales).astype(np.float32)
            fold(scales.astype(np.float32))
            scaled += 1
        if progress:
            progress(index + 1, len(groups))
    return scaled
