"""A seeded Llama-like test model whose MLP is gated by QuickGELU instead of SiLU.

    python examples/custom-fusion/quick_gelu_model.py -o out/model.onnx [--variant gqa] [--seed 0]

The model is llmc's "optimum" fixture (torch.onnx TorchScript export of LlamaForCausalLM,
llmc.testing) with each layer's MLP written as

    down_proj(quick_gelu(gate_proj(x)) * up_proj(x)),  quick_gelu(z) = z * Sigmoid(1.702 * z)

as torch.onnx exports transformers' QuickGELUActivation: Mul(z, 1.702), Sigmoid, Mul. No
pattern of llmc's raising names this activation, so it is raised to llm.elementwise ops that
-O2's fusions merge into one, next to the fused gate/up GEMM and its llm.split: the input the
example plugin (llmc-example-fuse-gated-activation) turns into a gated GEMM epilogue.

Needs the llmc Python package on the path (PYTHONPATH=python from the llmc checkout).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import onnx

from llmc.testing.builder import save_model
from llmc.testing.fixtures import VARIANTS
from llmc.testing.graph import GraphBuilder
from llmc.testing.llama import LlamaConfig, random_weights
from llmc.testing.optimum import OptimumDecoder

QUICK_GELU_ALPHA = 1.702


def quick_gelu_mlp(g: GraphBuilder, x: str, module: str, linear) -> str:
    """down_proj(quick_gelu(gate_proj(x)) * up_proj(x))."""
    with g.scope("gate_proj"):
        gate = linear(g, x, f"{module}.gate_proj")
    with g.scope("act_fn"):
        act = g.op("Mul", gate, g.op("Sigmoid", g.op("Mul", gate, g.const(QUICK_GELU_ALPHA))))
    with g.scope("up_proj"):
        up = linear(g, x, f"{module}.up_proj")
    hidden = g.op("Mul", act, up)
    with g.scope("down_proj"):
        return linear(g, hidden, f"{module}.down_proj")


class QuickGeluOptimumDecoder(OptimumDecoder):
    """The optimum-style decoder with the QuickGELU-gated MLP (the residual structure is the
    same)."""

    def mlp(self, g: GraphBuilder, x: str, module: str) -> str:
        return quick_gelu_mlp(g, x, module, self.linear)


def build_quick_gelu_model(config: LlamaConfig, seed: int = 0) -> onnx.ModelProto:
    """The QuickGELU-gated decoder for `config` with llmc.testing's seeded weights."""
    return QuickGeluOptimumDecoder(config, random_weights(config, seed)).build()


def write_quick_gelu_model(path: str | Path, variant: str = "gqa", seed: int = 0) -> Path:
    """Build the model of VARIANTS[variant] and save it to `path` (returned)."""
    return save_model(build_quick_gelu_model(VARIANTS[variant], seed), path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variant", default="gqa", choices=sorted(VARIANTS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", required=True, help="the model path (model.onnx)")
    args = parser.parse_args(argv)
    print(write_quick_gelu_model(args.output, args.variant, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
