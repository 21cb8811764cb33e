#!/usr/bin/env bash
# The pip package, as a user gets it: `pip install .` into a fresh venv (.venv-wheel, made
# anew each run), then the Python API tests (test/python/test_llm_api.py) against the
# installed package and its llmc command, not the checkout's python/ and build/.
#
#   bash scripts/test-wheel.sh
#
# Needs what scripts/setup.sh installs (system packages, .deps/xgrammar) and the default
# model in models/smollm2-135m (scripts/run-default-model.sh, or the main pytest run, makes
# it). The build tree is build-wheel/; with CCACHE_BASEDIR set to the checkout and build/'s
# compilers, ccache reuses build/'s objects, so the install takes about a minute after build/
# is built (twelve on 2 cores when nothing is reused).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CCACHE_BASEDIR="$PWD"
# scikit-build-core would compile with Python's gcc/g++, and ccache's key holds the
# compiler's name: /usr/bin/c++ in build/ and g++ here never share an entry.
if [[ -f build/CMakeCache.txt ]]; then
  CC=$(sed -n 's/^CMAKE_C_COMPILER:FILEPATH=//p' build/CMakeCache.txt)
  CXX=$(sed -n 's/^CMAKE_CXX_COMPILER:FILEPATH=//p' build/CMakeCache.txt)
  export CC CXX
fi
VENV=.venv-wheel

if [[ ! -f models/smollm2-135m/model.onnx ]]; then
  echo "test-wheel: models/smollm2-135m/model.onnx is missing: run scripts/run-default-model.sh" >&2
  exit 1
fi
rm -rf "$VENV"
python3 -m venv "$VENV"
echo "test-wheel: pip install . (build tree build-wheel/)"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check .
# The tests' own tools (pytest, the openai client), pinned as the project venv has them.
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r requirements.txt
LLMC_TEST_INSTALLED=1 "$VENV/bin/python" -m pytest test/python/test_llm_api.py -q \
  -p no:cacheprovider
