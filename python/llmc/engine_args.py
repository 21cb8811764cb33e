"""The engine arguments LLM and AsyncLLM take, with vLLM's names, turned into what
llmc._native.LLMEngine is made with."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional, Union

from llmc.model_cache import is_artifact, resolve_model
from llmc.native import native

_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
          "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}


def parse_bytes(value: Union[int, str], name: str) -> int:
    """An int of bytes, or text such as "2GiB" or "512 MiB"."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", value)
        if match and match.group(2).lower() in _UNITS:
            size = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
            if size > 0:
                return size
    raise ValueError(f"{name} must be a positive number of bytes or a size such as '2GiB', "
                     f"got {value!r}")


def compile_args_of_overrides(model, hf_overrides: Optional[dict]) -> list[str]:
    """The `llmc compile` arguments of vLLM's hf_overrides, of which llmc takes those that
    change what a model serves: {"classifier_from_token": ["no", "yes"]} (with
    "architectures" and "is_original_qwen3_reranker", as vLLM's Qwen3-Reranker recipe gives
    them) makes a causal LM a cross-encoder scored by tokens; "is_matryoshka" and
    "matryoshka_dimensions" let an embedding model's requests ask for fewer dimensions.
    Anything else is a ValueError."""
    if hf_overrides is None:
        return []
    if not isinstance(hf_overrides, dict):
        raise ValueError(f"hf_overrides must be a dict, got {hf_overrides!r}")
    known = {"classifier_from_token", "architectures", "is_original_qwen3_reranker",
             "is_matryoshka", "matryoshka_dimensions"}
    unknown = sorted(set(hf_overrides) - known)
    if unknown:
        raise ValueError(f"hf_overrides: llmc takes {', '.join(sorted(known))}, not "
                         f"{', '.join(unknown)}")
    if is_artifact(Path(model)):
        raise ValueError(f"{model} is compiled already: hf_overrides apply when compiling an "
                         "ONNX model (or pass `llmc compile` its flags)")
    return _scoring_args(hf_overrides) + _matryoshka_args(hf_overrides)


def _scoring_args(hf_overrides: dict) -> list[str]:
    if not {"classifier_from_token", "architectures",
            "is_original_qwen3_reranker"} & set(hf_overrides):
        return []
    tokens = hf_overrides.get("classifier_from_token")
    if (not isinstance(tokens, list) or not 1 <= len(tokens) <= 2
            or not all(isinstance(t, str) and t and "," not in t for t in tokens)):
        raise ValueError("hf_overrides' classifier_from_token must be a list of one or two "
                         f"tokens (no, yes), got {tokens!r}")
    architectures = hf_overrides.get("architectures", [])
    if not isinstance(architectures, list) or not all(
            isinstance(a, str) and a.endswith("ForSequenceClassification") for a in architectures):
        raise ValueError("hf_overrides' architectures must name a *ForSequenceClassification, "
                         f"got {architectures!r}")
    if hf_overrides.get("is_original_qwen3_reranker", True) is not True and len(tokens) == 2:
        raise ValueError("hf_overrides: two classifier tokens score as Qwen3-Reranker does "
                         "(yes minus no); is_original_qwen3_reranker cannot be false")
    return ["--classifier-from-token", ",".join(tokens)]


def _matryoshka_args(hf_overrides: dict) -> list[str]:
    widths = hf_overrides.get("matryoshka_dimensions")
    if widths is not None:
        if (not isinstance(widths, list) or not widths or not all(
                isinstance(w, int) and not isinstance(w, bool) and w > 0 for w in widths)):
            raise ValueError("hf_overrides' matryoshka_dimensions must be a list of positive "
                             f"widths, got {widths!r}")
        return ["--matryoshka-dimensions", ",".join(str(w) for w in widths)]
    matryoshka = hf_overrides.get("is_matryoshka")
    if matryoshka is None:
        return []
    if not isinstance(matryoshka, bool):
        raise ValueError(f"hf_overrides' is_matryoshka must be a bool, got {matryoshka!r}")
    return ["--matryoshka-dimensions", "any"] if matryoshka else []


def open_engine(model: Union[str, os.PathLike], *, max_num_seqs: Optional[int] = None,
                max_num_batched_tokens: Optional[int] = None,
                max_model_len: Optional[int] = None,
                gpu_memory_utilization: Optional[float] = None,
                kv_cache_memory: Union[None, int, str] = None,
                num_kv_blocks: Optional[int] = None, enable_prefix_caching: bool = True,
                swap_space: float = 0, seed: int = 0,
                speculative_config: Optional[dict] = None, scheduling_policy: str = "fcfs",
                num_threads: Optional[int] = None, hf_overrides: Optional[dict] = None,
                enable_lora: bool = False, opt_level: int = 2,
                quiet: bool = False) -> tuple[Path, "native.LLMEngine"]:
    """The artifact (compiled from ONNX when needed) and the engine serving it. LLM and
    AsyncLLM pass their engine arguments here; llmc.llm's LLM documents them."""
    sizes = [gpu_memory_utilization, kv_cache_memory, num_kv_blocks]
    if sum(size is not None for size in sizes) > 1:
        raise ValueError("give at most one of gpu_memory_utilization, kv_cache_memory and "
                         "num_kv_blocks: each sets the KV cache's size")
    if gpu_memory_utilization is not None and not 0 < gpu_memory_utilization <= 1:
        raise ValueError(f"gpu_memory_utilization must be in (0, 1], got "
                         f"{gpu_memory_utilization!r}")
    for name, value in (("max_num_seqs", max_num_seqs),
                        ("max_num_batched_tokens", max_num_batched_tokens),
                        ("max_model_len", max_model_len), ("num_kv_blocks", num_kv_blocks),
                        ("num_threads", num_threads)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                  or value < 1):
            raise ValueError(f"{name} must be None or an int >= 1, got {value!r}")
    if not isinstance(swap_space, (int, float)) or swap_space < 0:
        raise ValueError(f"swap_space must be >= 0 GiB, got {swap_space!r}")
    if speculative_config is not None and not isinstance(speculative_config, dict):
        raise ValueError(f"speculative_config must be None or a dict such as "
                         f"{{'method': 'ngram', 'num_speculative_tokens': 4}}, got "
                         f"{speculative_config!r}")
    if scheduling_policy not in ("fcfs", "priority"):
        raise ValueError(f"scheduling_policy must be 'fcfs' or 'priority', got "
                         f"{scheduling_policy!r}")
    extra_args = compile_args_of_overrides(model, hf_overrides)
    if enable_lora and not is_artifact(Path(model)):
        extra_args.append("--enable-lora")
    artifact = resolve_model(model, opt_level=opt_level, quiet=quiet, extra_args=extra_args)
    engine_args = {"enable_prefix_caching": bool(enable_prefix_caching),
                   "swap_space": float(swap_space), "seed": int(seed),
                   "scheduling_policy": scheduling_policy}
    for name, value in (("max_num_seqs", max_num_seqs),
                        ("max_num_batched_tokens", max_num_batched_tokens),
                        ("max_model_len", max_model_len)):
        if value is not None:
            engine_args[name] = value
    if speculative_config is not None:
        engine_args["speculative_config"] = speculative_config
    engine = native.LLMEngine(
        str(artifact), engine_args, num_threads=num_threads or 0,
        num_kv_blocks=num_kv_blocks or 0,
        kv_cache_bytes=0 if kv_cache_memory is None else parse_bytes(kv_cache_memory,
                                                                     "kv_cache_memory"),
        memory_fraction=gpu_memory_utilization or 0.0)
    if enable_lora and not engine.lora_sites:
        raise ValueError(f"{model} was compiled without LoRA sites: compile it with "
                         "--enable-lora to serve adapters")
    return artifact, engine
