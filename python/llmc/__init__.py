"""llmc: a compiler and runtime for serving decoder-only LLMs from ONNX.

    from llmc import LLM, SamplingParams
    llm = LLM("models/smollm2-135m/model.onnx")
    llm.generate(["Hello"], SamplingParams(temperature=0))[0].outputs[0].text

Serving: LLM (offline batches; embed() for an embedding model, classify() for a sequence
classifier, score() for a cross-encoder or an embedding model), AsyncLLM (streaming, asyncio),
SamplingParams, RequestOutput, PoolingParams, EmbeddingRequestOutput,
ClassificationRequestOutput, ScoringRequestOutput, LoRARequest (an adapter by request, with
enable_lora). Compiling:
compile() (`llmc compile` as a function, llmc.compiler). Lower layers: llmc.runtime.Model (model steps), llmc.engine.Engine (the engine stepped by hand),
llmc.tokenizer, llmc.chat_template. Test-model builders: llmc.testing; converters:
llmc.convert.
"""
from .compiler import CompileError, compile
from .errors import LlmcRequestError, LlmcRuntimeError
from .lora import LoRARequest
from .outputs import (ClassificationOutput, ClassificationRequestOutput, CompletionOutput,
                      EmbeddingOutput, EmbeddingRequestOutput, Logprob, PoolingParams,
                      RequestOutput, ScoringOutput, ScoringRequestOutput)
from .sampling_params import SamplingParams, StructuredOutputsParams


def __getattr__(name: str):
    # LLM and AsyncLLM load the native runtime; `import llmc` for compile() does not need it.
    if name == "LLM":
        from .llm import LLM
        return LLM
    if name == "AsyncLLM":
        from .async_llm import AsyncLLM
        return AsyncLLM
    raise AttributeError(f"module 'llmc' has no attribute {name!r}")


__all__ = ["AsyncLLM", "ClassificationOutput", "ClassificationRequestOutput", "CompileError",
           "CompletionOutput", "EmbeddingOutput",
           "EmbeddingRequestOutput", "LLM", "LlmcRequestError", "LlmcRuntimeError", "LoRARequest",
           "Logprob",
           "PoolingParams", "RequestOutput", "SamplingParams", "ScoringOutput",
           "ScoringRequestOutput", "StructuredOutputsParams", "compile"]
