"""Calibration for AWQ and GPTQ: what each quantized weight's input looks like on real text.

The text (calibration.txt beside this file by default, or --calibration FILE) is tokenized
with the model's tokenizer.json and cut into sequences; onnxruntime runs the fp32 model on
each, with every MatMul weight's activation input added as a graph output. Per activation:
the sum of x x^T over the tokens (GPTQ's Hessian), the mean magnitude of each channel and up
to `sample_rows` rows of x (AWQ's search). The activations are the fp32 model's: each weight
is calibrated as if the others stayed fp32.
"""
from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from tokenizers import Tokenizer

from llmc.testing.ort_reference import OrtDecoder

DEFAULT_TEXT = Path(__file__).with_name("calibration.txt")


@dataclass
class ActivationStats:
    """What the tokens of the calibration text put through one activation [tokens, K]."""

    tokens: int = 0
    gram: np.ndarray | None = None  # float64 [K, K]: sum of x x^T
    magnitude: np.ndarray | None = None  # float64 [K]: sum of |x|
    samples: list[np.ndarray] = field(default_factory=list)  # float32 rows of x

    def add(self, rows: np.ndarray, sample_rows: int, hessian: bool) -> None:
        rows = rows.astype(np.float64)
        if hessian:
            self.gram = rows.T @ rows if self.gram is None else self.gram + rows.T @ rows
        magnitude = np.abs(rows).sum(axis=0)
        self.magnitude = magnitude if self.magnitude is None else self.magnitude + magnitude
        kept = sum(len(sample) for sample in self.samples)
        if kept < sample_rows:
            self.samples.append(rows[:sample_rows - kept].astype(np.float32))
        self.tokens += len(rows)

    def hessian(self) -> np.ndarray:
        """GPTQ's H = 2 X^T X / tokens."""
        return 2.0 * self.gram / max(self.tokens, 1)

    def mean_magnitude(self) -> np.ndarray:
        return self.magnitude / max(self.tokens, 1)

    def sample(self) -> np.ndarray:
        return np.concatenate(self.samples)


def calibration_sequences(model_dir: Path, text: Path, length: int, count: int
                          ) -> list[list[int]]:
    """Up to `count` sequences of `length` tokens of `text`, with the model's tokenizer."""
    tokenizer_path = model_dir / "tokenizer.json"
    if not tokenizer_path.exists():
        raise ValueError(f"calibration needs the model's tokenizer.json beside it ({model_dir})")
    ids = Tokenizer.from_file(str(tokenizer_path)).encode(text.read_text()).ids
    sequences = [ids[start:start + length] for start in range(0, len(ids) - length + 1, length)]
    if not sequences:
        raise ValueError(f"{text} has fewer than {length} tokens")
    return sequences[:count]


def collect(model: onnx.ModelProto, model_path: Path, activations: list[str],
            sequences: list[list[int]], hessian: bool, sample_rows: int,
            progress=None) -> dict[str, ActivationStats]:
    """Runs the fp32 `model` (loaded from `model_path`) on each sequence and gathers the
    statistics of `activations` (tensor names)."""
    augmented = onnx.ModelProto()
    augmented.CopyFrom(model)
    outputs = {output.name for output in augmented.graph.output}
    for name in activations:
        if name not in outputs:
            augmented.graph.output.append(
                onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    stats = {name: ActivationStats() for name in activations}
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "model.onnx"
        onnx.save(augmented, str(path), save_as_external_data=True, location="model.onnx.data")
        for companion in ("genai_config.json",):
            if (model_path.parent / companion).exists():
                shutil.copy(model_path.parent / companion, work)
        options = ort.SessionOptions()
        options.log_severity_level = 3
        decoder = OrtDecoder(path, session_options=options)
        for index, sequence in enumerate(sequences):
            ids = np.array([sequence], dtype=np.int64)
            values = decoder.session.run(activations, decoder.feeds(ids, np.ones_like(ids)))
            for name, value in zip(activations, values):
                stats[name].add(value.reshape(-1, value.shape[-1]), sample_rows, hessian)
            if progress:
                progress(index + 1, len(sequences))
    return stats
