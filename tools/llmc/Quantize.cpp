//===- Quantize.cpp - `llmc quantize` -------------------------------------===//
//
// The quantizer is Python (numpy for the arithmetic, onnxruntime for AWQ's
// and GPTQ's calibration, onnx to write the file): `llmc quantize` runs
// `python -m llmc.quantize` from this build's source tree, with the
// interpreter named by $LLMC_PYTHON, else the tree's .venv (what
// scripts/setup.sh makes), else python3 on the PATH.
//
//===----------------------------------------------------------------------===//
#include "Quantize.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

namespace llmc {

int runQuantize(const std::vector<std::string> &args) {
  llvm::SmallString<256> package(LLMC_PYTHON_DIR);
  llvm::sys::path::append(package, "llmc", "quantize", "__main__.py");
  if (!llvm::sys::fs::exists(package)) {
    llvm::errs() << "llmc: error: llmc quantize needs the Python package of the source tree ("
                 << LLMC_PYTHON_DIR << "), which is not there\n";
    return 1;
  }
  std::string interpreter;
  if (auto fromEnv = llvm::sys::Process::GetEnv("LLMC_PYTHON")) {
    interpreter = *fromEnv;
  } else {
    llvm::SmallString<256> venv(LLMC_PYTHON_DIR);
    llvm::sys::path::append(venv, "..", ".venv", "bin", "python");
    if (llvm::sys::fs::can_execute(venv)) interpreter = std::string(venv);
    else if (auto found = llvm::sys::findProgramByName("python3")) interpreter = *found;
  }
  if (interpreter.empty()) {
    llvm::errs() << "llmc: error: llmc quantize needs Python 3 (set LLMC_PYTHON, or run "
                    "scripts/setup.sh)\n";
    return 1;
  }
  std::vector<llvm::StringRef> argv{interpreter, "-m", "llmc.quantize"};
  argv.insert(argv.end(), args.begin(), args.end());
  // The child inherits the environment, with this tree's package first on PYTHONPATH.
  std::string pythonPath = LLMC_PYTHON_DIR;
  if (auto existing = llvm::sys::Process::GetEnv("PYTHONPATH")) pythonPath += ":" + *existing;
  ::setenv("PYTHONPATH", pythonPath.c_str(), /*overwrite=*/1);
  std::string error;
  int status = llvm::sys::ExecuteAndWait(interpreter, argv, std::nullopt, {}, 0, 0, &error);
  if (status < 0) {
    llvm::errs() << "llmc: error: cannot run " << interpreter << ": " << error << "\n";
    return 1;
  }
  return status;
}

} // namespace llmc
