"""Complete a text prompt with a compiled model, until the C++ tokenizer exists: the prompt
is tokenized with the Hugging Face `tokenizers` package, `llmc run` generates greedily, and
the ids are decoded back.

    PYTHONPATH=python .venv/bin/python -m llmc.complete build/smollm2-135m.llmc \
        --tokenizer models/smollm2-135m/tokenizer.json --prompt "The capital of France is"
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("artifact", type=Path, help="the model.llmc directory")
    parser.add_argument("--tokenizer", type=Path, required=True, help="tokenizer.json")
    parser.add_argument("--prompt", required=True)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--llmc", type=Path, default=ROOT / "build" / "bin" / "llmc")
    args = parser.parse_args()

    tokenizer = Tokenizer.from_file(str(args.tokenizer))
    prompt_ids = tokenizer.encode(args.prompt).ids
    result = subprocess.run(
        [str(args.llmc), "run", str(args.artifact), "--json", "--max-tokens", str(args.max_tokens),
         "--prompt-ids", ",".join(map(str, prompt_ids))],
        capture_output=True, text=True)
    if result.returncode != 0:
        print(result.stderr.strip(), file=sys.stderr)
        return result.returncode
    report = json.loads(result.stdout)
    output_ids = report["outputs"][0]["output_ids"]
    print(f"prompt ({len(prompt_ids)} tokens): {args.prompt}")
    print(f"completion ({len(output_ids)} tokens): {tokenizer.decode(output_ids)}")
    print(f"prefill {report['prefill_tokens_per_s']:.1f} tokens/s, "
          f"decode {report['decode_tokens_per_s']:.1f} tokens/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
