"""`llmc bench serve` against a fake OpenAI-compatible server.

The fake server (http.server, a thread per connection) streams Server-Sent Events with
known delays and token counts, so the client's measurements can be checked against what
was sent:

  * the request body: streaming with usage, greedy, ignore_eos, max_tokens, token-id prompts,
    the model from GET /v1/models (or --model), the API key as a bearer token;
  * 50 ms between token events gives ITL and TPOT p50 of about 50 ms, a 100 ms wait before
    the first gives TTFT of about 100 ms;
  * output tokens are the final usage.completion_tokens, however many events carried them;
  * an HTTP 500, a stream cut without `data: [DONE]` (chunked or read to EOF) and an error
    event count as failed requests, with the first error printed and exit code 1;
  * --max-concurrency 1 never has two requests in flight at the server; --request-rate
    spreads the arrivals out;
  * /v1/chat/completions sends text prompts as messages and counts delta.content events;
  * bad flags and an unreachable server are one error line and exit code 1.

What a request does is chosen by the first token id of its prompt (see FakeServer.Handler),
so a --dataset file fixes each request's behaviour.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LLMC = Path(os.environ.get("LLMC_BUILD_DIR", ROOT / "build")) / "bin" / "llmc"
MODEL = "fake-model"

# The first prompt id picks the behaviour of a completion request: one of these ids, above
# the synthetic prompts' (below 512), or OK.
OK = 1000               # chunked SSE, one token an event, usage, [DONE]
HTTP_500 = 1001         # a JSON error body with status 500
CUT = 1002              # chunked SSE cut off after two events, no [DONE]
SHORT_USAGE = 1003      # like OK, but usage reports one token fewer than max_tokens
UNTIL_CLOSE = 1004      # no chunked encoding: the body ends when the server closes
CUT_UNTIL_CLOSE = 1005  # the same, closed before [DONE]
ERROR_EVENT = 1006      # an error event in the stream, then [DONE]


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True
    # The listen backlog: with socketserver's 5, the sixth of many simultaneous connections
    # is dropped and retried a second later.
    request_queue_size = 128

    def __init__(self):
        super().__init__(("127.0.0.1", 0), FakeServer.Handler)
        self.first_token_delay = 0.0
        self.token_delay = 0.0
        self.tokens_per_event = 1
        self.lock = threading.Lock()
        self.bodies: list[dict] = []
        self.headers_seen: list[dict] = []
        self.arrivals: list[float] = []
        self.in_flight = 0
        self.max_in_flight = 0

    def handle_error(self, request, client_address):
        # A client that fails a request closes its connection while the stream goes on.
        pass

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Small writes must leave at once, or Nagle's algorithm delays the events.
        disable_nagle_algorithm = True

        def log_message(self, *args):
            pass

        def do_GET(self):
            if self.path != "/v1/models":
                return self.send_json(404, {"error": {"message": "no such path"}})
            self.send_json(200, {"object": "list",
                                 "data": [{"id": MODEL, "object": "model"},
                                          {"id": "another-model", "object": "model"}]})

        def do_POST(self):
            server: FakeServer = self.server
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with server.lock:
                server.bodies.append(body)
                server.headers_seen.append(dict(self.headers))
                server.arrivals.append(time.monotonic())
                server.in_flight += 1
                self.counted = True
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
            try:
                chat = self.path == "/v1/chat/completions"
                kind = OK if chat else body["prompt"][0]
                if kind == HTTP_500:
                    return self.send_json(500, {"error": {"message": "the fake server failed"}})
                self.stream(body, kind, chat)
            finally:
                # Before the stream's last event at the latest (see stream()), so that a
                # client can never see a request end before the server counts it out.
                self.leave()

        def leave(self):
            """Counts the request out of those in flight, once."""
            server: FakeServer = self.server
            with server.lock:
                if self.counted:
                    server.in_flight -= 1
                    self.counted = False

        def send_json(self, status: int, payload: dict):
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def stream(self, body: dict, kind: int, chat: bool):
            server: FakeServer = self.server
            chunked = kind not in (UNTIL_CLOSE, CUT_UNTIL_CLOSE)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()

            def send(payload):
                data = f"data: {payload if isinstance(payload, str) else json.dumps(payload)}\n\n"
                data = data.encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)

            max_tokens = body["max_tokens"]
            prompt_tokens = len(body["prompt"]) if not chat else 7
            if chat:
                send({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
            time.sleep(server.first_token_delay)
            sent = 0
            while sent < max_tokens:
                count = min(server.tokens_per_event, max_tokens - sent)
                text = " tok" * count
                choice = ({"index": 0, "delta": {"content": text}} if chat else
                          {"index": 0, "text": text, "finish_reason": None})
                send({"object": "chat.completion.chunk" if chat else "text_completion",
                      "choices": [choice], "usage": None})
                sent += count
                if (kind in (CUT, CUT_UNTIL_CLOSE)) and sent == 2:
                    self.leave()
                    self.close_connection = True
                    return
                if kind == ERROR_EVENT and sent == 1:
                    send({"error": {"message": "the engine stopped", "code": 500}})
                    break
                if sent < max_tokens:
                    time.sleep(server.token_delay)
            completion = max_tokens - 1 if kind == SHORT_USAGE else max_tokens
            send({"choices": [], "usage": {"prompt_tokens": prompt_tokens,
                                           "completion_tokens": completion,
                                           "total_tokens": prompt_tokens + completion}})
            # The client ends the request at [DONE].
            self.leave()
            send("[DONE]")
            if chunked:
                self.wfile.write(b"0\r\n\r\n")


@pytest.fixture
def server():
    fake = FakeServer()
    thread = threading.Thread(target=fake.serve_forever, daemon=True)
    thread.start()
    yield fake
    fake.shutdown()
    fake.server_close()


def bench(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([str(LLMC), "bench", "serve", *args], capture_output=True,
                            text=True, timeout=120)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def run_json(server: FakeServer, *args: str, check: bool = True):
    result = bench("--url", server.url, "--json", *args, check=check)
    return json.loads(result.stdout), result


def write_dataset(path: Path, requests: list[tuple[int, int]]) -> str:
    """(behaviour, max_tokens) a line; the prompt is the behaviour's id and two more."""
    path.write_text("".join(json.dumps({"prompt_ids": [kind, 7, 9], "max_tokens": max_tokens})
                            + "\n" for kind, max_tokens in requests))
    return str(path)


def test_request_body_and_token_counts(server):
    report, _ = run_json(server, "--num-prompts", "5", "--input-len-range", "5:9",
                         "--output-len-range", "3:6", "--seed", "3", "--api-key", "sk-test")
    assert report["model"] == MODEL
    assert report["url"] == server.url + "/v1/completions"
    assert report["num_requests"] == 5 and report["failed_requests"] == 0
    assert "first_error" not in report
    assert len(server.bodies) == 5
    for body in server.bodies:
        assert body["model"] == MODEL
        assert body["stream"] is True
        assert body["stream_options"] == {"include_usage": True}
        assert body["temperature"] == 0
        assert body["ignore_eos"] is True
        assert 3 <= body["max_tokens"] <= 6
        assert 5 <= len(body["prompt"]) <= 9
        assert all(isinstance(i, int) and 0 <= i < 512 for i in body["prompt"])
    assert all(h["Authorization"] == "Bearer sk-test" for h in server.headers_seen)
    assert report["output_tokens"] == sum(b["max_tokens"] for b in server.bodies)
    assert report["input_tokens"] == sum(len(b["prompt"]) for b in server.bodies)
    for key in ("duration_s", "requests_per_s", "input_tokens_per_s", "output_tokens_per_s",
                "total_tokens_per_s", "request_rate", "burstiness", "max_concurrency"):
        assert key in report
    assert report["request_rate"] == "inf" and report["max_concurrency"] == 5
    assert set(report["ttft_ms"]) == {"mean", "p50", "p99"}


def test_same_seed_same_workload(server, tmp_path):
    args = ("--num-prompts", "4", "--input-len-range", "4:6", "--output-len-range", "2:3",
            "--seed", "11")
    bench(*args, "--dump-workload", str(tmp_path / "a.jsonl"))
    run_json(server, *args, "--request-rate", "50")
    sent = sorted((b["prompt"], b["max_tokens"]) for b in server.bodies)
    dumped = sorted((line["prompt_ids"], line["max_tokens"]) for line in
                    map(json.loads, (tmp_path / "a.jsonl").read_text().splitlines()))
    assert sent == dumped


def test_model_flag(server):
    run_json(server, "--num-prompts", "2", "--input-len-range", "4", "--output-len-range", "2",
             "--model", "another-model")
    assert {b["model"] for b in server.bodies} == {"another-model"}


def test_latencies(server, tmp_path):
    server.first_token_delay = 0.1
    server.token_delay = 0.05
    dataset = write_dataset(tmp_path / "w.jsonl", [(OK, 10)] * 4)
    report, _ = run_json(server, "--dataset", dataset)
    assert report["failed_requests"] == 0
    assert report["output_tokens"] == 40
    # Sleeps on a busy machine run long, never short; it stretches them all alike (CI
    # saw 358 ms for the 100 ms first token), so the upper bounds are ratios.
    ttft, itl = report["ttft_ms"]["p50"], report["itl_ms"]["p50"]
    assert ttft >= 95 and itl >= 48 and report["tpot_ms"]["p50"] >= 48, report
    # A request takes its first token and 9 gaps: the first token's time is not the whole
    # request's, nor a gap more than a token's time.
    request_ms = ttft + 9 * itl
    assert ttft < 0.5 * request_ms and report["tpot_ms"]["p50"] < 2 * itl, report
    # All four at once: the run takes about one request's time, not four.
    assert 500 <= 1000 * report["duration_s"] < 2 * request_ms, report


def test_output_tokens_from_usage(server, tmp_path):
    server.tokens_per_event = 3
    dataset = write_dataset(tmp_path / "w.jsonl", [(OK, 10), (OK, 7), (OK, 1)])
    report, _ = run_json(server, "--dataset", dataset)
    assert report["failed_requests"] == 0
    assert report["output_tokens"] == 18
    assert report["input_tokens"] == 9


def test_failed_requests(server, tmp_path):
    dataset = write_dataset(tmp_path / "w.jsonl", [(OK, 4), (HTTP_500, 4), (CUT, 4),
                                                   (CUT_UNTIL_CLOSE, 4), (ERROR_EVENT, 4),
                                                   (UNTIL_CLOSE, 4)])
    report, result = run_json(server, "--dataset", dataset, "--max-concurrency", "1",
                              check=False)
    assert result.returncode == 1
    assert report["num_requests"] == 6 and report["failed_requests"] == 4
    assert report["output_tokens"] == 8
    assert report["first_error"] == "request 1: HTTP 500: the fake server failed"
    assert result.stderr.splitlines()[-1] == (
        "llmc bench serve: error: 4 of 6 requests failed; "
        "request 1: HTTP 500: the fake server failed")

    table = bench("--url", server.url, "--dataset", dataset, "--quiet", check=False)
    assert table.returncode == 1
    assert "  requests               2 (4 failed)" in table.stdout.splitlines()


@pytest.mark.parametrize("kind, message", [
    (CUT, "the stream broke off before data: [DONE]"),
    (CUT_UNTIL_CLOSE, "the stream ended without data: [DONE]"),
    (ERROR_EVENT, "the server sent an error: the engine stopped"),
])
def test_failure_messages(server, tmp_path, kind, message):
    dataset = write_dataset(tmp_path / "w.jsonl", [(kind, 4)])
    report, result = run_json(server, "--dataset", dataset, check=False)
    assert result.returncode == 1
    assert report["first_error"].startswith("request 0: " + message), report


def test_max_concurrency(server, tmp_path):
    server.token_delay = 0.02
    dataset = write_dataset(tmp_path / "w.jsonl", [(OK, 5)] * 6)
    report, _ = run_json(server, "--dataset", dataset, "--max-concurrency", "1")
    assert report["failed_requests"] == 0 and report["max_concurrency"] == 1
    assert server.max_in_flight == 1

    server.max_in_flight = 0
    report, _ = run_json(server, "--dataset", dataset)
    assert server.max_in_flight > 1


def test_request_rate(server, tmp_path):
    dataset = write_dataset(tmp_path / "w.jsonl", [(OK, 2)] * 10)
    run_json(server, "--dataset", dataset, "--request-rate", "10")
    # Nine gaps of 0.1 s on average; those of seed 0 add up to 0.43 s.
    assert max(server.arrivals) - min(server.arrivals) > 0.3
    server.arrivals.clear()
    run_json(server, "--dataset", dataset, "--request-rate", "inf")
    assert max(server.arrivals) - min(server.arrivals) < 0.2
    server.arrivals.clear()
    report, _ = run_json(server, "--dataset", dataset, "--request-rate", "10",
                         "--burstiness", "0.5")
    assert report["request_rate"] == 10 and report["burstiness"] == 0.5


def test_chat_endpoint(server, tmp_path):
    dataset = tmp_path / "chat.jsonl"
    dataset.write_text(json.dumps({"prompt": "Hello there", "max_tokens": 5}) + "\n")
    report, _ = run_json(server, "--dataset", str(dataset), "--endpoint", "/v1/chat/completions")
    assert report["failed_requests"] == 0 and report["output_tokens"] == 5
    assert report["input_tokens"] == 7
    assert server.bodies[0]["messages"] == [{"role": "user", "content": "Hello there"}]

    result = bench("--url", server.url, "--endpoint", "/v1/chat/completions", check=False)
    assert result.returncode == 1
    assert result.stderr.startswith(
        "llmc bench serve: error: /v1/chat/completions takes text prompts")


def test_short_output_warns(server, tmp_path):
    dataset = write_dataset(tmp_path / "w.jsonl", [(SHORT_USAGE, 4)])
    report, result = run_json(server, "--dataset", dataset)
    assert report["output_tokens"] == 3
    assert "the server generated 3 tokens where the requests asked for 4" in result.stderr


def test_table_and_progress(server):
    result = bench("--url", server.url, "--num-prompts", "3", "--input-len-range", "4",
                   "--output-len-range", "2")
    lines = result.stdout.splitlines()
    assert lines[0] == (f"llmc bench serve: 3 requests to {server.url}/v1/completions "
                        f"(model {MODEL}), all at once, at most 3 in flight")
    assert lines[1] == "  requests               3 (0 failed)"
    assert [line.split()[0] for line in lines[-3:]] == ["TTFT", "TPOT", "ITL"]
    assert "done 3/3 requests" in result.stderr


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("args, message", [
    (["--url", f"http://127.0.0.1:{unused_port()}"], "cannot reach the server at http://127.0.0.1:"),
    (["--request-rate", "0"], "--request-rate must be a number above 0 or inf, not '0'"),
    (["--burstiness", "inf"], "--burstiness must be a number above 0, not 'inf'"),
    (["--url", "https://127.0.0.1:8000"], "--url must be http://HOST[:PORT][/PATH]"),
    (["--endpoint", "/v1/embeddings"], "--endpoint must be /v1/completions or "),
    (["--max-concurrency", "0"], "--max-concurrency must be an integer from 1 to"),
    (["--input-len-range", "5:3"], "--input-len-range (high end) must be an integer from 5 to"),
    (["--frobnicate", "1"], "unknown option --frobnicate"),
])
def test_errors(args, message):
    result = bench(*args, check=False)
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("llmc bench serve: error: " + message), lines
