#!/usr/bin/env bash
# Builds llmc and runs every test:
#   1. the lit + FileCheck suite (test/Import, test/Dialect, test/Passes, test/Tools)
#      against build/;
#   2. the runtime's GoogleTest unit tests (build/bin/llmc-unit-tests);
#   3. pytest over test/python (fixture builder, GGUF converter, raising of every fixture
#      and the default model, ONNX backend node tests, CPU parity with onnxruntime);
#   4. the pip package: `pip install .` into a fresh venv and the Python API tests against
#      it (scripts/test-wheel.sh);
#   5. the sanitizer job: build-asan/ (ASan + UBSan) builds llmc, llmc-opt, the runtime and
#      its unit tests, and the whole lit suite, the unit tests, the ONNX backend node tests,
#      the fixture raising, the server tests (test_server.py, test_embeddings.py,
#      test_classification.py, test_scoring.py) and the kernel cache's run against them.
#
#   bash scripts/test.sh
#
# Exits non-zero if anything fails. LLMC_BUILD_LOCK=FILE serialises each build step with
# other builds of the same trees (flock).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# ccache keys on relative paths, so builds in other clones of the repo share its cache.
export CCACHE_BASEDIR="$PWD"
ROOT=$PWD

bash scripts/setup.sh

build() {  # build DIR TARGET...
  if [[ -n ${LLMC_BUILD_LOCK:-} ]]; then flock "$LLMC_BUILD_LOCK" ninja -C "$@"
  else ninja -C "$@"; fi
}
stage() { echo; echo "== $* ($(date +%T))"; }

failed=()

# The kernel cache (llmc compile's compiled code units) starts empty in every run, so the
# tests measure and exercise cold compiles and never read what an earlier build wrote. Tests
# share it within a stage; the sanitizer stage has its own, so its compiles run there too.
fresh_kernel_cache() { rm -rf "$1"; export LLMC_CACHE_DIR="$ROOT/$1"; }
fresh_kernel_cache build/test-cache

stage "building build/"
build build

stage "lit tests (build/test)"
.venv/bin/lit -sv build/test || failed+=("lit")

stage "runtime unit tests (build/bin/llmc-unit-tests)"
build/bin/llmc-unit-tests --gtest_brief=1 || failed+=("unit")

# pytest on both cores: a test file stays on one worker, so its module and session fixtures
# (compiled models, onnxruntime references) are made once. The sanitizer stage deals the
# files that set XDIST_SHARDS (the ONNX node tests) over both (test/python/conftest.py):
# they are most of its work, and kept one worker busy alone for 10 minutes.
PYTEST_WORKERS=(-n 2 --dist loadfile)

stage "pytest (test/python)"
PYTHONPATH=python .venv/bin/python -m pytest test/python -q "${PYTEST_WORKERS[@]}" \
  || failed+=("pytest")

stage "the pip package (scripts/test-wheel.sh: pip install . into a fresh venv, the Python API tests against it)"
bash scripts/test-wheel.sh || failed+=("wheel")

stage "sanitizer build (build-asan/: ASan + UBSan, llmc, llmc-opt, runtime, unit tests)"
mkdir -p build-asan
# Configured every run (a second of work when nothing changed), so an older tree takes these
# flags. A unity build (8 sources to a translation unit) parses the MLIR headers once per
# batch, and -O0 skips the optimiser that the generated op definitions spend most of their
# time in: a cold build takes 7.5 min on 2 cores, against 18 min per file at -O1. The tests
# then run about 2 min longer. build/ stays one object per source, which keeps each file's
# own includes checked and an edit's rebuild small.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_CXX_FLAGS_RELEASE="-O0 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O0 -DNDEBUG" \
  -DLLMC_ENABLE_SANITIZERS=ON -DPython3_EXECUTABLE="$ROOT/.venv/bin/python" \
  >build-asan/cmake-configure.log 2>&1 || { cat build-asan/cmake-configure.log; exit 1; }
build build-asan llmc llmc-opt llmc_runtime_c llmc-unit-tests

fresh_kernel_cache build-asan/test-cache

stage "every lit test under ASan + UBSan (build-asan/test: importer, bad input, passes)"
.venv/bin/lit -sv build-asan/test || failed+=("lit (sanitizers)")

stage "runtime unit tests under ASan + UBSan"
build-asan/bin/llmc-unit-tests --gtest_brief=1 || failed+=("unit (sanitizers)")

stage "ONNX backend node tests, fixture raising, the server, structured outputs, tool calls, embeddings, classifiers, scoring, LoRA adapters and the kernel cache under ASan + UBSan"
LLMC_BUILD_DIR=build-asan PYTHONPATH=python .venv/bin/python -m pytest \
  test/python/test_onnx_node_tests.py test/python/test_raise.py test/python/test_server.py \
  test/python/test_structured_outputs.py test/python/test_tool_calls.py \
  test/python/test_embeddings.py test/python/test_classification.py \
  test/python/test_scoring.py test/python/test_lora.py test/python/test_kernel_cache.py -q \
  -p no:cacheprovider -n 2 --dist loadgroup \
  || failed+=("pytest (sanitizers)")

echo
if ((${#failed[@]})); then
  echo "test.sh: FAILED: ${failed[*]}"
  exit 1
fi
echo "test.sh: all test stages passed"
