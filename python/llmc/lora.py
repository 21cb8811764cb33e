"""LoRA adapters by request, with vLLM's LoRARequest.

    from llmc import LLM, LoRARequest
    llm = LLM("model.onnx", enable_lora=True, max_lora_rank=16)
    llm.generate(["..."], lora_request=LoRARequest("sql", 1, "adapters/sql"))

An adapter is a directory PEFT's save_pretrained wrote (adapter_config.json and
adapter_model.safetensors) for the model the ONNX file was exported from. It is loaded the
first time a request names its lora_int_id, and kept; requests with and without adapters,
and with different ones, share the engine's steps (vLLM's multi-LoRA batching).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Union


@dataclass(frozen=True)
class LoRARequest:
    """vLLM's LoRARequest: a name, an id unique per adapter (>= 1), and the adapter's
    directory."""
    lora_name: str
    lora_int_id: int
    lora_path: Union[str, os.PathLike] = ""

    def __post_init__(self):
        if not isinstance(self.lora_int_id, int) or isinstance(self.lora_int_id, bool) \
                or self.lora_int_id < 1:
            raise ValueError(f"lora_int_id must be an int >= 1, got {self.lora_int_id!r}")
        if not self.lora_path:
            raise ValueError("a LoRARequest needs lora_path, the adapter's directory")


def pop_max_lora_rank(engine_args: dict) -> int:
    """The max_lora_rank of LLM's or AsyncLLM's engine arguments (vLLM's default 16), taken
    out of them and checked."""
    max_lora_rank = engine_args.pop("max_lora_rank", 16)
    if not isinstance(max_lora_rank, int) or isinstance(max_lora_rank, bool) \
            or max_lora_rank < 1:
        raise ValueError(f"max_lora_rank must be an int >= 1, got {max_lora_rank!r}")
    return max_lora_rank


class LoraAdapters:
    """The adapters an engine has loaded, by lora_int_id."""

    def __init__(self, engine, max_lora_rank: int):
        self._engine = engine
        self._max_rank = max_lora_rank
        self._loaded: dict[int, tuple[str, object]] = {}

    def adapter_of(self, request: LoRARequest):
        """The engine's adapter for `request`, loaded on first use."""
        if not isinstance(request, LoRARequest):
            raise ValueError(f"lora_request must be a LoRARequest, got {request!r}")
        if not self._engine.lora_sites:
            raise ValueError("this model serves no LoRA adapter: compile it with "
                             "--enable-lora (LLM(..., enable_lora=True))")
        path = os.fspath(request.lora_path)
        known = self._loaded.get(request.lora_int_id)
        if known is not None:
            if known[0] != path:
                raise ValueError(f"lora_int_id {request.lora_int_id} is {known[0]}, not "
                                 f"{path}")
            return known[1]
        adapter = self._engine.load_lora(path, self._max_rank)
        self._loaded[request.lora_int_id] = (path, adapter)
        return adapter
