"""Weight-only quantization of an ONNX decoder into onnxruntime's block-quantized operators
(MatMulNBits, GatherBlockQuantized): `python -m llmc.quantize` (its --help) or quantize_model.

Methods: `rtn` rounds each group to nearest (blocks.py); `awq` first scales input channels
by their activations' magnitude (awq.py); `gptq` spreads each column's rounding error over
the columns after it (gptq.py). AWQ and GPTQ calibrate on text run through the fp32 model
(calibration.py; calibration.txt ships as the default). onnxruntime runs the result as it
is, and `llmc compile` keeps the weights packed.
"""
from __future__ import annotations

from pathlib import Path

import onnx

from .awq import apply_awq
from .blocks import QuantizedWeight, pack_codes, quantize_rtn, unpack_codes
from .calibration import DEFAULT_TEXT, calibration_sequences, collect
from .gptq import quantize_gptq
from .graph import ModelGraph

METHODS = ("rtn", "awq", "gptq")
CALIBRATION_LENGTH = 256
CALIBRATION_SEQUENCES = 8
AWQ_SAMPLE_ROWS = 256

__all__ = ["METHODS", "QuantizedWeight", "pack_codes", "quantize_model", "quantize_rtn",
           "quantize_gptq", "unpack_codes"]


def quantize_model(model: onnx.ModelProto, model_path: Path, method: str = "rtn", bits: int = 4,
                   block_size: int = 32, symmetric: bool = True, act_order: bool = False,
                   calibration: Path = DEFAULT_TEXT, say=None, progress=None,
                   accuracy_level: int = 0) -> tuple[onnx.ModelProto, int]:
    """The model (loaded from `model_path`, whose folder holds its tokenizer.json for
    calibration) with its weights quantized by `method`; and the number of weights quantized.
    Its MatMulNBits ask for `accuracy_level`: 0, the exact product, or 4, which lets
    onnxruntime (and `llmc compile`, by default) quantize their activations to int8.
    `say(message)` reports the stages, `progress(stage, done, total)` the work in each."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    if accuracy_level not in (0, 4):
        raise ValueError(f"accuracy level must be 0 (exact) or 4 (int8 activations), not "
                         f"{accuracy_level}")
    if act_order and method != "gptq":
        raise ValueError("act-order is GPTQ's: use it with method gptq")
    if act_order and bits != 4:
        # onnxruntime (1.31) runs MatMulNBits with g_idx at 2 and 4 bits only.
        raise ValueError("act-order is 4-bit: onnxruntime runs MatMulNBits with g_idx at 2 "
                         "and 4 bits only")
    if act_order and not symmetric:
        # With g_idx, onnxruntime (1.31) ignores packed zero points and uses 2^(bits-1).
        raise ValueError("act-order needs symmetric groups: onnxruntime ignores MatMulNBits' "
                         "zero points when g_idx is given")
    graph = ModelGraph(model)
    sites = graph.sites(bits, block_size)
    matmuls = [site for site in sites if not site.is_gather]
    stats = {}
    if method != "rtn" and matmuls:
        sequences = calibration_sequences(model_path.parent, calibration, CALIBRATION_LENGTH,
                                          CALIBRATION_SEQUENCES)
        if say:
            say(f"calibrating on {len(sequences)} x {CALIBRATION_LENGTH} tokens of "
                f"{calibration.name}")
        activations = list(dict.fromkeys(site.input for site in matmuls))
        stats = collect(model, model_path, activations, sequences, hessian=method == "gptq",
                        sample_rows=AWQ_SAMPLE_ROWS if method == "awq" else 0,
                        progress=progress and (lambda d, t: progress("calibration", d, t)))
    if method == "awq":
        scaled = apply_awq(graph, matmuls, stats, bits, block_size, symmetric,
                           progress=progress and (lambda d, t: progress("awq search", d, t)))
        if say:
            say(f"AWQ scaled {scaled} of {len(set(s.input for s in matmuls))} activations")
    quantized = []
    for index, site in enumerate(sites, start=1):
        if method == "gptq" and not site.is_gather:
            quantized.append(quantize_gptq(site.weight, stats[site.input].hessian(), bits,
                                           block_size, symmetric, act_order))
        else:
            quantized.append(quantize_rtn(site.weight, bits, block_size, symmetric))
        if progress:
            progress("weights", index, len(sites))
    graph.replace(sites, quantized, accuracy_level)
    return model, len(sites)
