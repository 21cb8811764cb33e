"""Compile ONNX models from Python: `llmc compile` as a function.

    import llmc

    llmc.compile("model.onnx", "model.llmc")                       # the artifact directory
    ir = llmc.compile("model.onnx", emit="step-ir", opt_level=3)   # IR text
    llmc.compile("model.onnx", "model.llmc",
                 plugins=["build-plugin/LlmcExampleFusion.so"],
                 passes=["func.func(llmc-example-fuse-gated-activation)"])  # before-lowering
    llmc.compile("model.onnx", "model.llmc",
                 passes={"after-raising": ["func.func(canonicalize)"],
                         "before-lowering": "func.func(cse)"})

The function runs the llmc executable (see find_llmc) and raises CompileError with llmc's
message when it fails.
"""
from __future__ import annotations

import codecs
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path
from typing import Iterable, Mapping, Sequence, Union

# What --emit produces: IR text (returned when no output is given) or a directory.
IR_KINDS = ("onnx-ir", "llm-ir", "step-ir", "graph-ir")
DIRECTORY_KINDS = ("artifact", "graph")
# The default pipeline's extension points, in pipeline order (passes/Pipelines/Pipelines.h).
EXTENSION_POINTS = ("after-raising", "before-fusion", "before-lowering")

PathLike = Union[str, os.PathLike]
Passes = Union[None, str, Sequence[str], Mapping[str, Union[str, Sequence[str]]]]

_ROOT = Path(__file__).resolve().parents[2]  # the checkout, when run from python/llmc


class CompileError(Exception):
    """`llmc compile` failed (or could not be run).

    str(error) is llmc's message (its `llmc: error: ...` lines); `returncode`, `stderr` and
    `command` hold the rest."""

    def __init__(self, message: str, returncode: int | None = None, stderr: str = "",
                 command: Sequence[str] = ()):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr
        self.command = list(command)


class LlmcNotFoundError(CompileError):
    """No llmc executable was found."""


def find_llmc() -> Path:
    """The llmc executable: $LLMC_BIN, else bin/llmc of the build tree next to this package
    ($LLMC_BUILD_DIR, or build/ of the checkout), else the one `pip install` put beside this
    Python's scripts, else `llmc` on PATH."""
    explicit = os.environ.get("LLMC_BIN")
    if explicit:
        path = Path(explicit)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise LlmcNotFoundError(f"LLMC_BIN={explicit} is not an executable file")
        return path
    build = Path(os.environ.get("LLMC_BUILD_DIR", _ROOT / "build"))
    if not build.is_absolute():
        build = _ROOT / build
    candidate = build / "bin" / "llmc"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return candidate
    installed = Path(sysconfig.get_path("scripts")) / "llmc"  # pip install's console command
    if installed.is_file() and os.access(installed, os.X_OK):
        return installed
    on_path = shutil.which("llmc")
    if on_path:
        return Path(on_path)
    raise LlmcNotFoundError(
        f"llmc executable not found: set LLMC_BIN, build llmc ({candidate} does not exist), "
        "or put llmc on PATH")


def _pipelines(passes: Passes, extension_point: str) -> list[tuple[str, str]]:
    """(point, pipeline) pairs, in the order given, from compile()'s `passes`."""
    if passes is None:
        return []
    if isinstance(passes, Mapping):
        items = list(passes.items())
    else:
        items = [(extension_point, passes)]
    pairs = []
    for point, pipelines in items:
        if point not in EXTENSION_POINTS:
            raise ValueError(f"unknown extension point {point!r}: use one of "
                             f"{', '.join(EXTENSION_POINTS)}")
        if isinstance(pipelines, (str, os.PathLike)):
            pipelines = [pipelines]
        for pipeline in pipelines:
            if not isinstance(pipeline, str) or not pipeline.strip():
                raise ValueError(f"passes for {point}: expected pass names or pipeline text, "
                                 f"got {pipeline!r}")
            pairs.append((point, pipeline))
    return pairs


def _error_message(stderr: str, returncode: int) -> str:
    """llmc's `llmc: error:` lines (all of stderr if there are none)."""
    lines = [line for line in stderr.splitlines() if "error:" in line]
    text = "\n".join(lines) if lines else stderr.strip()
    return text or f"llmc compile failed with exit status {returncode}"


def compile(model: PathLike, output: PathLike | None = None, *, opt_level: int = 2,
            passes: Passes = None, plugins: Iterable[PathLike] = (),
            extension_point: str = "before-lowering", emit: str = "artifact",
            quiet: bool = True, extra_args: Iterable[str] = ()) -> Path | str:
    """Compile an ONNX model with llmc.

    model: the model.onnx path. output: the artifact directory (emit="artifact" or "graph":
    required) or the IR file; with output None and an IR kind, the IR text is returned.
    opt_level: 0-3, the fusion level (-O). emit: "artifact" (default), "onnx-ir", "llm-ir",
    "step-ir", "graph-ir" or "graph". passes: passes to run at `extension_point`: a pass
    pipeline string or a list of them (each as --insert-passes takes it, e.g.
    "func.func(my-pass)" or "canonicalize"), or a dict {point: pipeline(s)} for several points.
    plugins: pass plugin libraries (.so) to load first (--load-pass-plugin). extra_args: more
    `llmc compile` arguments. Returns the output path, or the IR text.

    Raises CompileError (llmc's message) when llmc fails, ValueError for bad arguments.
    """
    if emit not in IR_KINDS + DIRECTORY_KINDS:
        raise ValueError(f"unknown emit kind {emit!r}: use one of "
                         f"{', '.join(DIRECTORY_KINDS + IR_KINDS)}")
    if emit in DIRECTORY_KINDS and output is None:
        raise ValueError(f"emit={emit!r} writes a directory: give output")
    if isinstance(opt_level, bool) or not isinstance(opt_level, int):
        raise ValueError(f"opt_level must be an int from 0 to 3, got {opt_level!r}")
    if extension_point not in EXTENSION_POINTS:
        raise ValueError(f"unknown extension point {extension_point!r}: use one of "
                         f"{', '.join(EXTENSION_POINTS)}")

    command = [str(find_llmc()), "compile", os.fspath(model), f"--emit={emit}",
               f"-O{opt_level}", "-o", "-" if output is None else os.fspath(output)]
    for plugin in plugins:
        command.append(f"--load-pass-plugin={os.fspath(plugin)}")
    for point, pipeline in _pipelines(passes, extension_point):
        command.append(f"--insert-passes={point}={pipeline}")
    if quiet:
        command.append("--quiet")
    command.extend(str(arg) for arg in extra_args)

    returncode, stdout, stderr = _run(command, show_progress=not quiet)
    if returncode != 0:
        raise CompileError(_error_message(stderr, returncode), returncode, stderr, command)
    if output is None:
        return stdout
    return Path(output)


def _run(command: list[str], show_progress: bool) -> tuple[int, str, str]:
    """Runs llmc: (exit status, stdout, stderr). With show_progress, stderr (llmc's progress
    and messages) also goes to this process's stderr as it comes."""
    if not show_progress:
        result = subprocess.run(command, capture_output=True, text=True)
        return result.returncode, result.stdout, result.stderr
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stderr = bytearray()

    def forward() -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while chunk := os.read(process.stderr.fileno(), 4096):
            stderr.extend(chunk)
            sys.stderr.write(decoder.decode(chunk))
            sys.stderr.flush()

    forwarder = threading.Thread(target=forward, daemon=True)
    forwarder.start()
    stdout = process.stdout.read()
    returncode = process.wait()
    forwarder.join()
    return returncode, stdout.decode(errors="replace"), stderr.decode(errors="replace")
