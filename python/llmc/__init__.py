"""llmc: a compiler and runtime for serving decoder-only LLMs from ONNX.

Python side: test-model builders (llmc.testing), model converters (llmc.convert).
"""
