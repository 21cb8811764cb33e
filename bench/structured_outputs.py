"""Structured outputs under load: output tokens/s of `llmc serve` with and without a JSON
schema, at several numbers of concurrent streams, and the grammar masks' cost per token.

    PYTHONPATH=python .venv/bin/python bench/structured_outputs.py \
        [--artifact build/smollm2-135m.llmc] [--streams 1,32,64] [--requests-per-stream 2] \
        [--max-tokens 256] [--threads N] [--json] [--record]

The server runs the default model (scripts/run-default-model.sh). Each case sends
streams x requests-per-stream chat requests through the official `openai` client, `streams`
at a time (each at temperature 0.7 with its own seed, so that the outputs differ), first
without a constraint, then with `response_format` json_schema (a list of people with bounded
fields: the outputs end when the document does). Output tokens/s is the completion tokens of
all requests over the case's wall time. From /metrics before and after each case: the masks
computed, their time per mask (on the mask thread, beside the model step), and the time the
engine's steps waited for them, per generated token and as a share of the wall time.
Progress goes to stderr; --record appends the rows to bench/RESULTS.md.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import jsonschema
import openai

from llmc.testing.server import Server
from common import machine, progress, record_rows

ROOT = Path(__file__).resolve().parents[1]
LLMC = ROOT / "build" / "bin" / "llmc"
RESULTS = ROOT / "bench" / "RESULTS.md"
SECTION = "## Structured outputs: output tokens/s with and without a JSON schema"

SCHEMA = {
    "type": "object",
    "properties": {"people": {
        "type": "array", "maxItems": 8,
        "items": {"type": "object",
                  "properties": {"name": {"type": "string", "maxLength": 24},
                                 "age": {"type": "integer", "minimum": 0, "maximum": 120},
                                 "city": {"type": "string", "maxLength": 24}},
                  "required": ["name", "age", "city"], "additionalProperties": False}}},
    "required": ["people"], "additionalProperties": False}
PROMPT = "List a few people with their names, ages and cities."



def run_case(server: Server, streams: int, requests: int, max_tokens: int,
             constrained: bool) -> dict:
    client = openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0,
                           timeout=3600)
    extra = ({"response_format": {"type": "json_schema",
                                  "json_schema": {"name": "people", "schema": SCHEMA}}}
             if constrained else {})

    def one(index: int) -> tuple[int, str, str]:
        response = client.chat.completions.create(
            model="", messages=[{"role": "user", "content": PROMPT}], max_tokens=max_tokens,
            temperature=0.7, seed=index, **extra)
        choice = response.choices[0]
        return response.usage.completion_tokens, choice.message.content, choice.finish_reason

    before = server.metrics()
    start = time.perf_counter()
    with ThreadPoolExecutor(streams) as pool:
        results = list(pool.map(one, range(requests)))
    wall = time.perf_counter() - start
    after = server.metrics()
    delta = {name: after[name] - before[name] for name in
             ("llmc_grammar_masks_total", "llmc_grammar_mask_seconds_total",
              "llmc_grammar_wait_seconds_total")}
    tokens = sum(r[0] for r in results)
    valid = 0
    if constrained:
        for _, text, reason in results:
            if reason == "stop":
                jsonschema.validate(json.loads(text), SCHEMA)
                valid += 1
    masks = delta["llmc_grammar_masks_total"]
    return {"streams": streams, "requests": requests, "constrained": constrained,
            "output_tokens": tokens, "wall_s": wall, "output_tokens_per_s": tokens / wall,
            "complete_documents": valid, "masks": int(masks),
            "mask_ms_per_mask": 1e3 * delta["llmc_grammar_mask_seconds_total"] / masks
            if masks else 0.0,
            "wait_ms_per_token": 1e3 * delta["llmc_grammar_wait_seconds_total"] / tokens,
            "wait_share": delta["llmc_grammar_wait_seconds_total"] / wall}


def section_text() -> str:
    return f"""{SECTION}

`bench/structured_outputs.py`: `llmc serve` on the default model (SmolLM2-135M-Instruct,
fp32), chat requests through the `openai` client, `streams` at a time, at temperature 0.7
with a seed each, up to the row's max_tokens; without a constraint, then with a
`response_format` JSON schema (a list of up to 8 people with bounded fields; every output
that stops is validated with `jsonschema`). Mask ms: the time to compute one next-token
mask (xgrammar, on the engine's mask thread, beside the model step); wait: the time steps
waited for masks, per generated token and as a share of the wall time.

| date | machine | threads | streams | requests | free out tok/s | schema out tok/s | schema / free | complete documents | mask ms | wait ms per token | wait share |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
"""


def table_rows(result: dict) -> list[str]:
    rows = []
    for free, schema in zip(result["free"], result["schema"]):
        rows.append(
            f"| {result['date']} | {result['machine']} | {result['threads']} "
            f"| {free['streams']} | {free['requests']} | {free['output_tokens_per_s']:.1f} "
            f"| {schema['output_tokens_per_s']:.1f} "
            f"| {schema['output_tokens_per_s'] / free['output_tokens_per_s']:.2f}x "
            f"| {schema['complete_documents']}/{schema['requests']} "
            f"| {schema['mask_ms_per_mask']:.2f} | {schema['wait_ms_per_token']:.3f} "
            f"| {100 * schema['wait_share']:.2f}% |")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact", type=Path, default=ROOT / "build" / "smollm2-135m.llmc")
    parser.add_argument("--streams", default="1,32,64")
    parser.add_argument("--requests-per-stream", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument("--record", action="store_true",
                        help=f"append rows to {RESULTS.relative_to(ROOT)}")
    args = parser.parse_args()
    for path, hint in ((LLMC, "ninja -C build llmc"),
                       (args.artifact, "bash scripts/run-default-model.sh")):
        if not path.exists():
            print(f"structured_outputs: {path} not found ({hint})", file=sys.stderr)
            return 1

    streams = [int(s) for s in args.streams.split(",")]
    result = {"date": datetime.date.today().isoformat(), "machine": machine(),
              "threads": args.threads, "free": [], "schema": []}
    with Server(LLMC, args.artifact, "--threads", str(args.threads), "--max-num-seqs",
                str(max(streams))) as server:
        for count in streams:
            requests = count * args.requests_per_stream
            for key, constrained in (("free", False), ("schema", True)):
                progress(f"{count} streams, {requests} requests, {key}", args.quiet)
                result[key].append(run_case(server, count, requests, args.max_tokens,
                                            constrained))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print("\n".join(table_rows(result)))
    if args.record:
        record_rows(RESULTS, SECTION, section_text(), table_rows(result))
        progress(f"recorded in {RESULTS.relative_to(ROOT)}", args.quiet)
    return 0


if __name__ == "__main__":
    sys.exit(main())
