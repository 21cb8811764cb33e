"""A live `llmc serve` for tests and benchmarks, and the model the server tests use.

    with Server(LLMC, artifact, "--api-key", "k") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k")
        ...
        server.metrics()["llmc_kv_cache_blocks_used"]
    # leaving the block sends SIGTERM and checks that the server exits 0

The server listens on a free loopback port (--port 0); its stderr is collected in
`server.log`.
"""
from __future__ import annotations

import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

from ..convert.gguf import convert_once, default_gguf_path
from .builder import build_model, save_model
from .llama import LlamaConfig

ROOT = Path(__file__).resolve().parents[3]
DEFAULT_MODEL_DIR = ROOT / "models" / "smollm2-135m"

_LISTENING = re.compile(r"serving (\S+) on (http://\S+)")


def default_model_dir() -> Path:
    """models/smollm2-135m/, converted from the pinned GGUF package on first use (once among
    concurrent callers: llmc.convert.gguf.convert_once)."""
    convert_once(default_gguf_path(), DEFAULT_MODEL_DIR)
    return DEFAULT_MODEL_DIR


def write_chat_model(directory: Path, seed: int = 0) -> Path:
    """A small random Llama (2 layers) with the default model's vocabulary, tokenizer and
    chat template, so that text and chat requests run fast; its words are random."""
    config = LlamaConfig(vocab_size=49152, hidden_size=64, intermediate_size=128, num_layers=2,
                         num_heads=4, num_kv_heads=2, tie_word_embeddings=True)
    path = save_model(build_model(config, "optimum", seed=seed), Path(directory) / "model.onnx")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(default_model_dir() / name, path.parent / name)
    return path


def compile_chat_model(llmc: Path, directory: Path) -> Path:
    """write_chat_model compiled by `llmc compile` into <directory>/chat.llmc."""
    onnx = write_chat_model(Path(directory) / "onnx")
    artifact = Path(directory) / "chat.llmc"
    result = subprocess.run([str(llmc), "compile", str(onnx), "-o", str(artifact), "--quiet"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return artifact


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text as {'name{labels}': value}, comments dropped."""
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


class Server:
    def __init__(self, llmc: Path, artifact: Path, *args: str, startup_timeout: float = 120):
        self.command = [str(llmc), "serve", str(artifact), "--port", "0", *args]
        self.startup_timeout = startup_timeout
        self.log: list[str] = []
        self.url = ""
        self.model = ""
        self.process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def __enter__(self) -> "Server":
        self.process = subprocess.Popen(self.command, stderr=subprocess.PIPE, text=True)
        listening = threading.Event()

        def read_log():
            for line in self.process.stderr:
                self.log.append(line)
                found = _LISTENING.search(line)
                if found:
                    self.model, self.url = found.group(1), found.group(2)
                    listening.set()

        threading.Thread(target=read_log, daemon=True).start()
        deadline = time.monotonic() + self.startup_timeout
        while not listening.wait(0.1):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError("llmc serve did not start:\n" + "".join(self.log))
        return self

    def __exit__(self, *exc_info):
        if self.process.poll() is None:
            code = self.stop()
            if exc_info[0] is None:
                assert code == 0, f"llmc serve exited {code}:\n" + "".join(self.log)

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM, and the exit code."""
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise

    def get(self, path: str) -> str:
        with urllib.request.urlopen(self.url + path, timeout=30) as response:
            return response.read().decode()

    def metrics(self) -> dict[str, float]:
        return parse_metrics(self.get("/metrics"))

    def wait_for_idle(self, timeout: float = 30) -> dict[str, float]:
        """Polls /metrics until no KV block is held and no request is pending."""
        deadline = time.monotonic() + timeout
        while True:
            metrics = self.metrics()
            if (metrics["llmc_kv_cache_blocks_used"] == 0
                    and metrics["llmc_num_requests_pending"] == 0):
                return metrics
            if time.monotonic() > deadline:
                raise AssertionError(f"the server is not idle after {timeout} s: {metrics}")
            time.sleep(0.05)
