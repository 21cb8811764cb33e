"""`llmc serve` under load, on loopback (the model of test_server.py: a small random Llama
with the default model's tokenizer).

  * 200 concurrent streaming clients for 60 s (LLMC_LOAD_TEST_SECONDS to change it), each
    sending request after request: no request is lost or refused, every stream ends with
    [DONE], and afterwards no KV block is held;
  * 1,000 streaming connections open at once are all answered, while the server runs on a
    fixed handful of threads (none per connection).
"""
from __future__ import annotations

import asyncio
import json
import os
import random
import resource
import time
from pathlib import Path

import pytest

from llmc.testing.server import Server, compile_chat_model

ROOT = Path(__file__).resolve().parents[2]
LLMC = Path(os.environ.get("LLMC_BUILD_DIR", ROOT / "build")) / "bin" / "llmc"
LOAD_SECONDS = float(os.environ.get("LLMC_LOAD_TEST_SECONDS", "60"))


@pytest.fixture(scope="module")
def artifact(tmp_path_factory) -> Path:
    return compile_chat_model(LLMC, tmp_path_factory.mktemp("server-load"))


@pytest.fixture(autouse=True)
def enough_file_descriptors():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def stream_completion(host: str, port: int, body: dict) -> tuple[int, list[str]]:
    """One streaming request on its own connection: the status and the SSE data fields."""
    reader, writer = await asyncio.open_connection(host, port)
    payload = json.dumps({**body, "stream": True}).encode()
    writer.write(b"POST /v1/completions HTTP/1.1\r\nHost: test\r\nConnection: close\r\n"
                 b"Content-Type: application/json\r\nContent-Length: "
                 + str(len(payload)).encode() + b"\r\n\r\n" + payload)
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    while (await reader.readline()) != b"\r\n":  # headers
        pass
    body_bytes = b""
    if status == 200:
        while True:  # chunked transfer coding
            size = int((await reader.readline()).strip(), 16)
            if size == 0:
                break
            body_bytes += (await reader.readexactly(size + 2))[:-2]
    else:
        body_bytes = await reader.read()
    writer.close()
    await writer.wait_closed()
    events = [event[len("data: "):] for event in body_bytes.decode().split("\n\n")
              if event.startswith("data: ")]
    return status, events


def server_address(server: Server) -> tuple[str, int]:
    host, port = server.url.removeprefix("http://").split(":")
    return host, int(port)


def test_200_clients_streaming_for_a_minute(artifact):
    with Server(LLMC, artifact, "--threads", "2", "--kv-blocks", "512") as server:
        host, port = server_address(server)
        failures: list[str] = []
        finished = 0

        async def client(number: int):
            nonlocal finished
            rng = random.Random(number)
            deadline = time.monotonic() + LOAD_SECONDS
            while time.monotonic() < deadline:
                max_tokens = rng.randint(1, 48)
                status, events = await stream_completion(host, port, {
                    "prompt": f"client {number} says" + " hello" * rng.randint(0, 40),
                    "max_tokens": max_tokens, "ignore_eos": True, "temperature": 0.7,
                    "seed": rng.randint(0, 1 << 30)})
                chunks = [json.loads(event) for event in events[:-1]]
                if status != 200 or not events or events[-1] != "[DONE]":
                    failures.append(f"status {status}, last event {events[-1:]}")
                elif chunks[-1]["choices"][0]["finish_reason"] != "length":
                    failures.append(f"finish {chunks[-1]['choices'][0]['finish_reason']}")
                else:
                    finished += 1

        async def main():
            await asyncio.gather(*(client(i) for i in range(200)))

        asyncio.run(main())
        assert failures == []
        metrics = server.wait_for_idle(timeout=30)
        assert metrics['llmc_requests_finished_total{finish_reason="length"}'] == finished
        assert finished >= 200
        print(f"{finished} requests in {LOAD_SECONDS:.0f} s from 200 clients")


def test_a_thousand_streams_at_once_on_a_few_threads(artifact):
    with Server(LLMC, artifact, "--threads", "2", "--http-threads", "2") as server:
        host, port = server_address(server)
        thread_counts = []

        async def watch_threads(done: asyncio.Event):
            while not done.is_set():
                thread_counts.append(len(os.listdir(f"/proc/{server.process.pid}/task")))
                await asyncio.sleep(0.05)

        async def main():
            done = asyncio.Event()
            watcher = asyncio.create_task(watch_threads(done))
            results = await asyncio.gather(*(stream_completion(host, port, {
                "prompt": f"stream {i}", "max_tokens": 8, "ignore_eos": True})
                for i in range(1000)))
            done.set()
            await watcher
            return results

        results = asyncio.run(main())
        assert [status for status, _ in results] == [200] * 1000
        assert all(events[-1] == "[DONE]" for _, events in results)
        # The engine's threads, its step thread pool and two for HTTP: no more.
        assert max(thread_counts) < 16, thread_counts
        server.wait_for_idle()
