#!/usr/bin/env bash
# Installs everything llmc needs on a Debian bookworm machine and configures build/.
#
#   bash scripts/setup.sh             # what building and testing llmc need
#   bash scripts/setup.sh exporters   # also the exporters' venvs (.venv-optimum: torch,
#                                     # transformers 4.57, optimum-onnx; .venv-genai: torch,
#                                     # transformers 5, onnxruntime-genai), for
#                                     # scripts/make-exporter-fixtures.sh; several GB
#   bash scripts/setup.sh llama-cpp   # also .venv-llamacpp (llama-cpp-python, llama.cpp built
#                                     # from source for this CPU), for bench/llamacpp_runner.py
#   bash scripts/setup.sh vllm        # also .venv-vllm (vLLM's CPU backend, PyPI's torch) and
#                                     # tcmalloc, for bench/vllm_runner.py; several GB
#   bash scripts/setup.sh exporters llama-cpp   # options combine
#
# System packages come from apt (LLVM/MLIR 22 from the configured apt sources), Python
# packages from requirements.txt into .venv (installed with --no-deps: the file is a
# complete pinned closure). Idempotent: prints nothing when there is nothing to do.
set -euo pipefail
OPTIONS=" $* "
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

log() { echo "setup: $*"; }

# --- system packages ---------------------------------------------------------------
PACKAGES=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools   # MLIR 22, FileCheck, not, split-file
  libprotobuf-dev protobuf-compiler                        # the importer's onnx.proto
  cmake ninja-build ccache g++ curl                        # the build; xgrammar's download
  python3 python3-venv python3-dev                         # the project venv; the bindings
  libgtest-dev                                             # C++ unit tests
  libopenblas-dev nlohmann-json3-dev                       # runtime: CPU GEMMs, manifest.json
  libpcre2-dev libicu-dev                                  # tokenizer: regexes, Unicode data
  libboost-dev                                             # server: Boost.Beast/Asio (headers)
)
# vLLM's CPU backend wants tcmalloc preloaded (its docs' LD_PRELOAD); bench/ preloads it.
[[ $OPTIONS == *" vllm "* ]] && PACKAGES+=(libgoogle-perftools4)
missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed'; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  SUDO=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    SUDO=(sudo)
  fi
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" apt-get update -qq
  "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- Python venv ---------------------------------------------------------------------
VENV=$ROOT/.venv
STAMP=$VENV/.requirements.sha256
if [[ ! -x $VENV/bin/python ]]; then
  log "creating .venv"
  python3 -m venv "$VENV"
fi
want=$(sha256sum requirements.txt | cut -d' ' -f1)
have=$(cat "$STAMP" 2>/dev/null || true)
if [[ $want != "$have" ]]; then
  log "installing requirements.txt into .venv"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r requirements.txt
  echo "$want" > "$STAMP"
fi

# --- xgrammar (structured outputs) ---------------------------------------------------
# The engine's grammar-constrained decoding uses xgrammar's C++ core, built here as a static
# library from the sources in its PyPI sdist (pinned and hash-checked; never committed) and
# installed into .deps/xgrammar, where CMakeLists.txt finds it. Its Python bindings are not
# built (their config.cmake is replaced), nor its -Werror and LTO flags kept. One fix is
# applied: 0.2.8 lets a JSON-schema string with minLength/maxLength hold raw control
# characters (invalid JSON); its character class gets U+0000-U+001F excluded, as the
# unbounded strings' has. The stamp names the fix, so that a fixed build replaces an old one.
XGRAMMAR_VERSION=0.2.8
XGRAMMAR_STAMP=$XGRAMMAR_VERSION+bounded-string-controls
XGRAMMAR_SHA256=8305646fd2b319d6c3003f51a1665e54cbbe9cba1fb636bc41d0b46434ccbb80
XGRAMMAR_URL=https://files.pythonhosted.org/packages/03/0f/29f521535729be740779c2c98b630ef6607cf28be9b669895dd2b821ff63/xgrammar-$XGRAMMAR_VERSION.tar.gz
XGRAMMAR=$ROOT/.deps/xgrammar
if [[ $(cat "$XGRAMMAR/.version" 2>/dev/null || true) != "$XGRAMMAR_STAMP" ]]; then
  log "building xgrammar $XGRAMMAR_VERSION (C++ core) into .deps/xgrammar"
  work=$ROOT/.deps/xgrammar-work
  rm -rf "$work" "$XGRAMMAR"
  mkdir -p "$work/build"
  curl -fsSL "$XGRAMMAR_URL" -o "$work/xgrammar.tar.gz"
  echo "$XGRAMMAR_SHA256  $work/xgrammar.tar.gz" | sha256sum -c --quiet -
  tar -C "$work" -xzf "$work/xgrammar.tar.gz"
  python3 - "$work/xgrammar-$XGRAMMAR_VERSION/cpp/json_schema_converter.cc" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
bounded = r"""AddCharacterClass({{'"', '"'}, {'\\', '\\'}, {'\r', '\r'}, {'\n', '\n'}}, true)"""
if text.count(bounded) != 1:
    sys.exit("setup: xgrammar's bounded-string character class is not where 0.2.8 has it")
open(path, "w").write(text.replace(bounded, bounded.replace("({", "({{0, 0x1f}, ", 1)))
PY
  echo 'set(XGRAMMAR_BUILD_PYTHON_BINDINGS OFF)' >"$work/build/config.cmake"
  cmake -S "$work/xgrammar-$XGRAMMAR_VERSION" -B "$work/build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS="-Wno-error -fno-lto" \
    -DCMAKE_INSTALL_PREFIX="$XGRAMMAR" >"$work/configure.log" 2>&1 \
    || { cat "$work/configure.log" >&2; exit 1; }
  ninja -C "$work/build" install >"$work/build.log" 2>&1 || { tail -50 "$work/build.log" >&2; exit 1; }
  # Its license and notice travel with the library.
  cp "$work/xgrammar-$XGRAMMAR_VERSION"/{LICENSE,NOTICE} "$XGRAMMAR/"
  echo "$XGRAMMAR_STAMP" >"$XGRAMMAR/.version"
  rm -rf "$work"
fi

# --- opt-in venvs -----------------------------------------------------------------------
# install_venv NAME REQUIREMENTS [STAMP [PIP_ARGS...]]: makes .venv-NAME and installs
# REQUIREMENTS, a complete pinned closure, with --no-deps whenever it changed since the last
# install: a hash of the file (and of STAMP, what else the install depends on) is kept in the
# venv, as .venv keeps its own.
install_venv() {
  local name=$1 requirements=$2 stamp=${3:-}
  shift $(($# < 3 ? $# : 3))
  local venv=$ROOT/.venv-$name want have
  [[ -x $venv/bin/python ]] || { log "creating .venv-$name"; python3 -m venv "$venv"; }
  if [[ -n $stamp ]]; then
    want=$(cat "$requirements" - <<<"$stamp" | sha256sum | cut -d' ' -f1)
  else
    want=$(sha256sum "$requirements" | cut -d' ' -f1)
  fi
  have=$(cat "$venv/.requirements.sha256" 2>/dev/null || true)
  if [[ $want != "$have" ]]; then
    log "installing $requirements into .venv-$name"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps "$@" \
      -r "$requirements"
    echo "$want" > "$venv/.requirements.sha256"
  fi
}

# Each exporter pins its own transformers, so each has a venv of its own.
if [[ $OPTIONS == *" exporters "* ]]; then
  for name in optimum genai; do
    install_venv "$name" "scripts/exporters/requirements-$name.txt"
  done
fi

# llama-cpp-python compiles llama.cpp while it installs (several minutes): for the host CPU
# (GGML_NATIVE), with OpenMP threads, without AMX (its AMX matmul crashes on the default model
# on a Sapphire Rapids VM; a no-op on CPUs without AMX). The stamp covers CMAKE_ARGS too, so
# changing them rebuilds (a forced reinstall: pip would keep the installed build), and pip's
# cache is off so that it cannot hand back a wheel built with other CMAKE_ARGS.
if [[ $OPTIONS == *" llama-cpp "* ]]; then
  NO_AMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  export CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_OPENMP=ON '-DCMAKE_C_FLAGS=$NO_AMX' '-DCMAKE_CXX_FLAGS=$NO_AMX'"
  install_venv llamacpp bench/requirements-llamacpp.txt "$CMAKE_ARGS" --no-cache-dir \
    --force-reinstall
fi

if [[ $OPTIONS == *" vllm "* ]]; then
  install_venv vllm bench/requirements-vllm.txt
fi

# --- build/ ----------------------------------------------------------------------------
if [[ ! -f build/build.ninja || ! -f build/CMakeCache.txt ]]; then
  log "configuring build/"
  mkdir -p build
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DPython3_EXECUTABLE="$VENV/bin/python" >build/cmake-configure.log 2>&1 \
    || { cat build/cmake-configure.log >&2; exit 1; }
fi
