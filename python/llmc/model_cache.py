"""What LLM(model) runs: an artifact directory as it is, or an ONNX model compiled once and
cached by the content of what the compile reads.

The cache is $LLMC_CACHE_DIR, else $XDG_CACHE_HOME/llmc, else ~/.cache/llmc; each artifact
lives in compiled/<key>/, where the key hashes the llmc executable, the compile options,
the ONNX file, its external data and the tokenizer files beside it. A compile writes to a
scratch directory and renames it into place, so an interrupted one leaves nothing behind.
Beside compiled/, kernels/ is `llmc compile`'s own cache of compiled kernels, which every
compile shares (--no-kernel-cache leaves it alone).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from llmc.compiler import compile as compile_model
from llmc.compiler import find_llmc

# The files beside model.onnx that `llmc compile` copies into the artifact.
_SIDE_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
               "generation_config.json")
_CHUNK = 8 << 20


def cache_root() -> Path:
    explicit = os.environ.get("LLMC_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "llmc"


def _hash_file(digest, path: Path) -> None:
    digest.update(f"{path.name}\0{path.stat().st_size}\0".encode())
    with open(path, "rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)


def _compile_inputs(onnx: Path) -> list[Path]:
    """The ONNX file, its external data (files named after it) and the side files."""
    directory = onnx.parent
    data = sorted(p for p in directory.iterdir()
                  if p.is_file() and p.name != onnx.name and p.name.startswith(onnx.name))
    side = [directory / name for name in _SIDE_FILES if (directory / name).is_file()]
    return [onnx, *data, *side]


def cache_key(onnx: Path, opt_level: int, extra_args: list[str]) -> str:
    digest = hashlib.sha256()
    _hash_file(digest, find_llmc())
    digest.update(f"-O{opt_level}\0{extra_args!r}\0".encode())
    for path in _compile_inputs(onnx):
        _hash_file(digest, path)
    return digest.hexdigest()[:32]


def is_artifact(path: Path) -> bool:
    return path.is_dir() and (path / "manifest.json").is_file()


def resolve_model(model: str | os.PathLike, opt_level: int = 2, extra_args: list[str] = (),
                  quiet: bool = False) -> Path:
    """The artifact directory to run for `model`: an artifact directory, an .onnx file, or
    a directory holding model.onnx (compiled on first use, then taken from the cache)."""
    path = Path(model)
    if is_artifact(path):
        return path
    if path.is_dir() and (path / "model.onnx").is_file():
        path = path / "model.onnx"
    if not (path.is_file() and path.suffix == ".onnx"):
        raise ValueError(f"{model}: not a compiled model (a directory with manifest.json), an "
                         ".onnx file or a directory holding model.onnx")
    extra_args = list(extra_args)
    if not quiet:
        print(f"llmc: hashing {path} for the compile cache", file=sys.stderr, flush=True)
    target = cache_root() / "compiled" / cache_key(path, opt_level, extra_args)
    if is_artifact(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    if not quiet:
        print(f"llmc: compiling {path} into {target}", file=sys.stderr, flush=True)
    scratch = Path(tempfile.mkdtemp(prefix=".partial-", dir=target.parent))
    try:
        compile_model(path, scratch / "model.llmc", opt_level=opt_level, quiet=quiet,
                      extra_args=extra_args)
        try:
            os.rename(scratch / "model.llmc", target)
        except OSError:
            if not is_artifact(target):  # not another process's compile of the same model
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target
