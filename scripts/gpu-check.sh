#!/usr/bin/env bash
# The GPU check, for a machine with an NVIDIA GPU:
#   1. checks that there is a GPU (nvidia-smi), and stops with one line if there is none;
#   2. builds build/ (configured by scripts/setup.sh only when it is not configured yet);
#   3. runs pytest test/gpu: every fixture compiled with --target cuda, bf16 and f16, against
#      onnxruntime; the engine's graphs, preemption and copy-on-write; the real exporters' files;
#   4. runs the GPU benchmark, bench/gpu_bench.py (llmc against the GPU's limits and against
#      transformers on a ~1.1B-parameter Llama);
#   5. measures serving, bench/gpu_serve.py (`llmc bench serve` against `llmc serve` on that
#      model, 64 and 256 streams);
#   6. on request, profiles a step (bench/gpu_profile.py: each kernel's GPU time under ncu);
#   7. prints a summary table last.
#
#   bash scripts/gpu-check.sh [tests] [bench] [serve] [profile]   # all but profile unless named
#
# LLMC_BUNDLE=FILE takes llmc from FILE, made by scripts/gpu-bundle.sh on a machine that can
# build it, instead of building: for GPU machines without LLVM/MLIR 22. LLMC_SKIP_BUILD=1 uses
# build/ as it is. LLMC_PYTHON=PATH picks the Python (default: the first of .venv/bin/python
# and python3 that has what the stages need: numpy, onnx and onnxruntime, pytest for the
# tests, torch and transformers for the benchmark, tokenizers for serving, torch for the
# profile). LLMC_PYTEST_ARGS adds arguments to the tests' pytest (on the GPU machines lent for
# checks: "-n 8 --timeout 150 --timeout-method thread", pytest-xdist and pytest-timeout, so
# that a crash or a hang costs one test, not the run); LLMC_BENCH_ARGS adds arguments to
# bench/gpu_bench.py (say "--repeat 2" to fit a short lease). LLMC_BUILD_LOCK=FILE serialises
# the build with other builds of the tree (flock), as in test.sh. Logs, the benchmarks' JSON
# and the profile's CSV go to build/gpu-check/. Exits non-zero if any stage fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CCACHE_BASEDIR="$PWD"
OUT=build/gpu-check

die() { echo "gpu-check: $*" >&2; exit 1; }
stage() { echo; echo "== $* ($(date +%T))"; }

# --- stages ---------------------------------------------------------------------------------
run_tests=0
run_bench=0
run_serve=0
run_profile=0
for arg in "$@"; do
  case $arg in
    tests) run_tests=1 ;;
    bench) run_bench=1 ;;
    serve) run_serve=1 ;;
    profile) run_profile=1 ;;
    *) die "unknown argument '$arg' (expected: tests, bench, serve, profile)" ;;
  esac
done
if ((!run_tests && !run_bench && !run_serve && !run_profile)); then
  run_tests=1; run_bench=1; run_serve=1
fi

# --- the GPU --------------------------------------------------------------------------------
command -v nvidia-smi >/dev/null \
  || die "no NVIDIA GPU: nvidia-smi is not installed (test/gpu and bench/gpu_bench.py need a GPU)"
if ! listing=$(nvidia-smi -L 2>&1); then
  die "no NVIDIA GPU: nvidia-smi -L failed: $(head -n1 <<<"$listing")"
fi
gpu=$(grep -m1 '^GPU ' <<<"$listing" || true)
[[ -n $gpu ]] || die "no NVIDIA GPU: nvidia-smi -L lists none"
gpu=${gpu#GPU *: }
gpu=${gpu% (UUID*}
echo "gpu-check: $gpu"

# --- Python ---------------------------------------------------------------------------------
modules=(numpy onnx onnxruntime)
if ((run_tests)); then modules+=(pytest); fi
if ((run_bench)); then modules+=(torch transformers); fi
if ((run_serve)); then modules+=(tokenizers); fi
if ((run_profile)); then modules+=(torch); fi
missing_modules() {  # missing_modules PYTHON: the modules it cannot import, space-separated
  "$1" -c 'import importlib.util, sys
print(" ".join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))' "${modules[@]}"
}
if [[ -n ${LLMC_PYTHON:-} ]]; then candidates=("$LLMC_PYTHON")
else candidates=(.venv/bin/python python3); fi
PYTHON=
problems=()
for candidate in "${candidates[@]}"; do
  if ! command -v "$candidate" >/dev/null; then problems+=("$candidate: not found"); continue; fi
  if ! missing=$(missing_modules "$candidate" 2>&1); then
    problems+=("$candidate: does not run"); continue
  fi
  if [[ -z $missing ]]; then PYTHON=$candidate; break; fi
  problems+=("$candidate lacks $missing")
done
[[ -n $PYTHON ]] || die "no Python with ${modules[*]} (${problems[*]/%/;} set LLMC_PYTHON)"

# --- build ----------------------------------------------------------------------------------
# --- llmc from a bundle (scripts/gpu-bundle.sh) --------------------------------------------
cuda_library_dirs() {  # the folders holding NVRTC and cuBLASLt, ':'-separated
  local roots=(/usr/local/cuda/ /usr/lib/x86_64-linux-gnu/)
  roots+=($("$PYTHON" -c 'import site; print(*site.getsitepackages())' 2>/dev/null || true))
  find "${roots[@]}" \( -name 'libnvrtc.so.1[0-9]' -o -name 'libcublasLt.so.1[0-9]' \) \
      -printf '%h\n' 2>/dev/null | sort -u | paste -sd:
}
unpack_bundle() {  # unpack_bundle FILE: bin/llmc and python/llmc/ into build/, its deps on the path
  local unpacked=build/gpu-bundle/unpacked
  rm -rf "$unpacked" && mkdir -p "$unpacked" build/bin build/python/llmc
  "$PYTHON" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    "$1" "$unpacked" || die "cannot unpack $1"
  cp "$unpacked/bin/llmc" build/bin/llmc
  cp "$unpacked"/python/llmc/_native*.so build/python/llmc/
  export LD_LIBRARY_PATH="$PWD/$unpacked/deps:$(cuda_library_dirs)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  if [[ -z ${CUDA_HOME:-} && ! -d /usr/local/cuda/include ]] && command -v nvcc >/dev/null; then
    CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
    export CUDA_HOME  # where llmc finds ptxas and the headers NVRTC includes
  fi
  build/bin/llmc compile --help >/dev/null \
    || die "the bundle's llmc does not run here (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)"
}

if [[ -n ${LLMC_BUNDLE:-} ]]; then
  stage "unpacking $LLMC_BUNDLE into build/"
  unpack_bundle "$LLMC_BUNDLE"
  build_result="from $LLMC_BUNDLE"
elif [[ ${LLMC_SKIP_BUILD:-0} == 1 ]]; then
  [[ -x build/bin/llmc ]] && compgen -G "build/python/llmc/_native*.so" >/dev/null \
    || die "LLMC_SKIP_BUILD=1, but build/ has no bin/llmc or python/llmc/_native*.so"
  build_result="skipped (LLMC_SKIP_BUILD=1)"
else
  stage "building build/"
  [[ -f build/build.ninja ]] || bash scripts/setup.sh
  lock=()
  if [[ -n ${LLMC_BUILD_LOCK:-} ]]; then lock=(flock "$LLMC_BUILD_LOCK"); fi
  "${lock[@]}" ninja -C build || die "build failed"
  build_result="ok"
fi
mkdir -p "$OUT"

failed=()
tests_result="not run"
bench_result="not run"
serve_result="not run"
profile_result="not run"

# --- tests ----------------------------------------------------------------------------------
if ((run_tests)); then
  stage "CUDA parity tests (pytest test/gpu, log in $OUT/pytest.log)"
  start=$SECONDS
  # shellcheck disable=SC2086  # LLMC_PYTEST_ARGS is a list of words
  if PYTHONPATH=python "$PYTHON" -m pytest test/gpu -q -p no:cacheprovider ${LLMC_PYTEST_ARGS:-} 2>&1 \
      | tee "$OUT/pytest.log"; then
    tests_result="ok"
  else
    tests_result="FAILED"
    failed+=("tests")
  fi
  tests_result+=": $(tail -n1 "$OUT/pytest.log") ($((SECONDS - start)) s)"
fi

# --- benchmarks and profile ----------------------------------------------------------------
# run_bench_script NAME SCRIPT ARGS...: runs bench/SCRIPT with ARGS, its table to
# $OUT/NAME.txt; sets NAME_result to "ok (N s)" or "FAILED (N s)" and adds a failure to failed.
run_bench_script() {
  local name=$1 script=$2 outcome start=$SECONDS
  shift 2
  if PYTHONPATH=python "$PYTHON" "bench/$script" "$@" | tee "$OUT/$name.txt"; then
    outcome="ok"
  else
    outcome="FAILED"
    failed+=("$name")
  fi
  printf -v "${name}_result" '%s (%d s)' "$outcome" $((SECONDS - start))
}

if ((run_bench)); then
  stage "GPU benchmark (bench/gpu_bench.py, figures in $OUT/bench.json)"
  # shellcheck disable=SC2086  # LLMC_BENCH_ARGS is a list of words
  run_bench_script bench gpu_bench.py --json "$OUT/bench.json" ${LLMC_BENCH_ARGS:-}
fi
if ((run_serve)); then
  stage "serving benchmark (bench/gpu_serve.py, figures in $OUT/serve.json)"
  run_bench_script serve gpu_serve.py --json "$OUT/serve.json"
fi
if ((run_profile)); then
  stage "profile (bench/gpu_profile.py, ncu's CSV in $OUT/ncu)"
  run_bench_script profile gpu_profile.py --csv-dir "$OUT/ncu"
fi

# --- summary --------------------------------------------------------------------------------
echo
echo "== gpu-check summary"
printf '%-8s %s\n' gpu "$gpu" build "$build_result" tests "$tests_result" bench "$bench_result" \
  serve "$serve_result" profile "$profile_result"
if [[ $bench_result == ok* ]]; then
  echo
  cat "$OUT/bench.txt"
fi
if [[ $serve_result == ok* ]]; then
  echo
  cat "$OUT/serve.txt"
fi
echo
if ((${#failed[@]})); then
  echo "gpu-check: FAILED: ${failed[*]}"
  exit 1
fi
echo "gpu-check: all stages passed"
