#!/usr/bin/env bash
# Packs llmc for a GPU machine that has no LLVM/MLIR and cannot install packages: one
# tar.xz holding
#   bin/llmc                      the compiler and runtime, linked against the static LLVM
#                                 and MLIR archives instead of libLLVM.so/libMLIR.so (those
#                                 two are 250 MB; the static link keeps only what llmc uses)
#   python/llmc/_native*.so       the runtime's Python module, built for the GPU image's
#                                 python3 (3.12) with $LLMC_BUNDLE_PYTHON, else python3.12
#                                 on PATH or pyenv's, in build-gpu-python/
#   deps/*.so*                    the shared libraries both need beyond glibc, libstdc++, zlib,
#                                 zstd and CUDA's NVRTC (ICU, PCRE2, OpenBLAS, protobuf-lite)
#
#   bash scripts/gpu-bundle.sh [OUTPUT]      # default build/gpu-bundle/llmc-gpu.tar.xz
#
# Run it after `ninja -C build` on this (Debian bookworm) machine. On the GPU machine,
# `LLMC_BUNDLE=OUTPUT bash scripts/gpu-check.sh` unpacks it into build/ and runs the check
# without building (docs/cuda.md, "Checking on a GPU machine").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
output=$(realpath -m "${1:-build/gpu-bundle/llmc-gpu.tar.xz}")
LLVM_LIB=/usr/lib/llvm-22/lib

[[ -f build/build.ninja ]] || { echo "gpu-bundle: build/ is not configured (scripts/setup.sh)" >&2; exit 1; }
ninja -C build llmc >/dev/null

staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
mkdir -p "$staging/bin" "$staging/python/llmc" "$staging/deps"

# The link of build/bin/llmc, with libLLVM.so/libMLIR.so and the static MLIR archives that
# ninja names replaced by every static LLVM and MLIR archive in one group at the end (the
# linker takes only the members llmc references), and without --export-dynamic (pass
# plugins, which need it, are not part of the bundle). gold's identical code folding (safe:
# only functions whose address is never taken) takes another 7 MB off.
link=$(ninja -C build -t commands bin/llmc | tail -n1 | sed -e 's/^: && //' -e 's/ && :$//')
link=$(sed -E -e "s#${LLVM_LIB}/lib(MLIR|LLVM)[A-Za-z0-9]*\.(a|so[.0-9]*)##g" \
              -e 's#-Wl,--export-dynamic##; s#-rdynamic##' \
              -e "s#-o bin/llmc#-o $staging/bin/llmc -fuse-ld=gold -Wl,--icf=safe#" <<<"$link")
archives=$(ls "$LLVM_LIB"/libMLIR*.a "$LLVM_LIB"/libLLVM*.a | grep -v CAPI | tr '\n' ' ')
echo "gpu-bundle: linking bin/llmc against the static LLVM/MLIR archives"
(cd build && eval "$link -Wl,--start-group $archives -Wl,--end-group -lz \
   /lib/x86_64-linux-gnu/libzstd.so.1") 2> >(grep -v ': warning: ' >&2)
strip "$staging/bin/llmc"
if ldd "$staging/bin/llmc" | grep -q -e libLLVM -e libMLIR; then
  echo "gpu-bundle: bin/llmc still needs libLLVM/libMLIR" >&2; exit 1
fi
# The native module for the GPU image's interpreter: a build tree of its own, configured with
# that Python and a venv of it holding nanobind; beside build/, so ccache reuses its objects.
export CCACHE_BASEDIR=$PWD
bundle_python=
for candidate in ${LLMC_BUNDLE_PYTHON:-python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3.12}; do
  if "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
    bundle_python=$candidate; break
  fi
done
[[ -n $bundle_python ]] \
  || { echo "gpu-bundle: no Python 3.12 to build the module for the GPU image with (set LLMC_BUNDLE_PYTHON)" >&2; exit 1; }
venv=build-gpu-python/venv
[[ -x $venv/bin/python ]] || "$bundle_python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check nanobind=="$(
  sed -n 's/^nanobind==//p' requirements.txt)"
if [[ ! -f build-gpu-python/build.ninja ]]; then
  cmake -S . -B build-gpu-python -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DPython3_EXECUTABLE="$PWD/.venv/bin/python" -DPython_EXECUTABLE="$PWD/$venv/bin/python" \
    >build-gpu-python/cmake-configure.log 2>&1 \
    || { cat build-gpu-python/cmake-configure.log >&2; exit 1; }
fi
echo "gpu-bundle: building the native module for $("$venv/bin/python" -V)"
ninja -C build-gpu-python _native >/dev/null
cp build-gpu-python/python/llmc/_native*.so "$staging/python/llmc/"
strip "$staging"/python/llmc/_native*.so

# Shared libraries a CUDA machine's image does not promise: everything ldd resolves that is
# not part of glibc, the compiler's runtime, zlib/zstd or CUDA.
ldd "$staging/bin/llmc" "$staging"/python/llmc/_native*.so | awk '/=> \// {print $3}' | sort -u \
  | grep -v -E '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libz|libzstd|libnvrtc)\.so' \
  | while read -r library; do cp -L "$library" "$staging/deps/"; done

mkdir -p "$(dirname "$output")"
echo "gpu-bundle: compressing ($(du -sh "$staging" | cut -f1))"
tar -C "$staging" -cf - bin python deps | xz -T0 -9 >"$output"
echo "gpu-bundle: $output ($(du -h "$output" | cut -f1)): $(ls "$staging/deps" | tr '\n' ' ')"
