"""Quantizes an ONNX decoder with onnxruntime's weight-only quantizer (MatMulNBitsQuantizer).

    .venv-genai/bin/python scripts/exporters/ort_quantize.py IN.onnx OUT.onnx \
        --bits 4|8 --block-size N [--symmetric] [--qdq]

Every MatMul by a constant becomes com.microsoft MatMulNBits, and at 4 bits the embedding's
Gather becomes GatherBlockQuantized (uint4 codes with zero points, or int4 when symmetric),
with accuracy_level 0 (the exact product). With --qdq the MatMuls' weights become blocked
DequantizeLinear (opset 21, int4/uint4) feeding the MatMul instead, the quantizer's QDQ
format, and Gather stays as it is. The model is saved in one file, as
onnxruntime.quantization writes it for a small model.
"""
from __future__ import annotations

import argparse

import onnx
from onnxruntime.quantization import QuantFormat
from onnxruntime.quantization.matmul_nbits_quantizer import (DefaultWeightOnlyQuantConfig,
                                                             MatMulNBitsQuantizer)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("output")
    parser.add_argument("--bits", type=int, choices=[4, 8], required=True)
    parser.add_argument("--block-size", type=int, required=True)
    parser.add_argument("--symmetric", action="store_true")
    parser.add_argument("--qdq", action="store_true")
    args = parser.parse_args()
    # onnxruntime's quantizer quantizes Gather at 4 bits and in its QOperator format only.
    op_types = ("MatMul", "Gather") if args.bits == 4 and not args.qdq else ("MatMul",)
    axes = (("MatMul", 0), ("Gather", 1))
    quant_format = QuantFormat.QDQ if args.qdq else QuantFormat.QOperator
    config = DefaultWeightOnlyQuantConfig(
        block_size=args.block_size, is_symmetric=args.symmetric, accuracy_level=0,
        bits=args.bits, quant_format=quant_format, op_types_to_quantize=op_types,
        quant_axes=axes)
    quantizer = MatMulNBitsQuantizer(
        onnx.load(args.model), bits=args.bits, block_size=args.block_size,
        is_symmetric=args.symmetric, accuracy_level=0, algo_config=config,
        quant_format=quant_format, op_types_to_quantize=op_types, quant_axes=axes)
    quantizer.process()
    quantizer.model.save_model_to_file(args.output, use_external_data_format=False)


if __name__ == "__main__":
    main()
