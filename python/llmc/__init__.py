"""llmc: a compiler and runtime for serving decoder-only LLMs from ONNX.

Python side: compile() (`llmc compile` as a function, llmc.compiler), test-model builders
(llmc.testing), model converters (llmc.convert).
"""
from .compiler import CompileError, compile

__all__ = ["CompileError", "compile"]
