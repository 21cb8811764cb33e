# lit configuration of the example plugin's FileCheck tests: llmc-opt loads the plugin
# (--load-pass-plugin) and runs its pass on hand-written step IR.
#
#   lit -sv examples/custom-fusion/test --param llmc_opt=$PREFIX/bin/llmc-opt \
#       --param plugin=build-plugin/LlmcExampleFusion.so
#
# Parameters (--param NAME=VALUE): llmc_opt (default: llmc-opt on PATH), plugin (required),
# llvm_tools_dir (where FileCheck is; default: FileCheck on PATH, else /usr/lib/llvm-22/bin),
# exec_root (where lit writes its temporary files; default: a directory under /tmp).
import os
import shutil
import tempfile

import lit.formats

config.name = "llmc-example-custom-fusion"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = lit_config.params.get(
    "exec_root", os.path.join(tempfile.gettempdir(), "llmc-example-custom-fusion-lit"))


def required(name, value):
    if not value:
        lit_config.fatal(f"give --param {name}=... (see {__file__})")
    return os.path.abspath(value)


llmc_opt = required("llmc_opt", lit_config.params.get("llmc_opt") or shutil.which("llmc-opt"))
plugin = required("plugin", lit_config.params.get("plugin"))
filecheck = shutil.which("FileCheck")
tools_dir = lit_config.params.get("llvm_tools_dir") or (
    os.path.dirname(filecheck) if filecheck else "/usr/lib/llvm-22/bin")

config.environment["PATH"] = os.pathsep.join([tools_dir, os.environ.get("PATH", "")])
config.substitutions.append(("%llmc-opt", llmc_opt))
config.substitutions.append(("%plugin", plugin))
