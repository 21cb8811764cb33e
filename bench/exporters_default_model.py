"""The default model as the real exporters write it: every export compiled by llmc, its compile
time next to onnxruntime's session creation on the same file, and its greedy tokens next to
transformers' on the weights the exporter was given, in one run on one machine.

    bash scripts/setup.sh exporters        # once: the exporters' venvs (several GB)
    PYTHONPATH=python .venv/bin/python bench/exporters_default_model.py [--tokens 32]
        [--keep DIR] [--json] [--quiet]

transformers reads SmolLM2-135M-Instruct's GGUF (the default model, Q4_1, dequantized to f32;
scripts/exporters/default_model.py) and saves it; optimum-onnx (defaults), onnxruntime-genai's
builder (fp32 and int4 for the CPU) and torch.onnx's dynamo exporter (opset 18) export that
directory. Each export is compiled with `llmc compile` (-O2, the CPU target) and timed next
to onnxruntime building an InferenceSession on the same file; then llmc's greedy tokens for
the prompts are compared with transformers'. int4 is a different model (its weights are
requantized), so its tokens are reported, not expected to match. Record the table in
bench/RESULTS.md with the machine.
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compile_time import time_onnxruntime  # bench/, beside this script
from llmc.convert.gguf import default_gguf_path
from llmc.runtime import Model

ROOT = Path(__file__).resolve().parents[1]
LLMC = ROOT / "build" / "bin" / "llmc"
PROMPTS = ["The capital of France is", "def fibonacci(n):",
           "Once upon a time, in a small village,"]


def exports(work: Path) -> dict[str, tuple[list[str], Path]]:
    """Each export's name -> (the command that writes it, the model.onnx it writes)."""
    hf = str(work / "hf")
    genai = [str(ROOT / ".venv-genai/bin/python"), "-m", "onnxruntime_genai.models.builder",
             "-i", hf, "-e", "cpu", "-c", str(work / "genai-cache")]
    return {
        "optimum": ([str(ROOT / ".venv-optimum/bin/optimum-cli"), "export", "onnx", "--model", hf,
                     "--task", "text-generation-with-past", str(work / "optimum")],
                    work / "optimum" / "model.onnx"),
        "genai fp32": ([*genai, "-p", "fp32", "-o", str(work / "genai-fp32")],
                       work / "genai-fp32" / "model.onnx"),
        "genai int4": ([*genai, "-p", "int4", "-o", str(work / "genai-int4")],
                       work / "genai-int4" / "model.onnx"),
        "dynamo opset 18": ([str(ROOT / ".venv-genai/bin/python"),
                             str(ROOT / "scripts/exporters/dynamo_export.py"), hf,
                             str(work / "dynamo"), "--opset", "18"],
                            work / "dynamo" / "model.onnx"),
    }


def run(command: list[str], what: str, log: Path) -> None:
    with log.open("w") as out:
        if subprocess.run(command, stdout=out, stderr=subprocess.STDOUT).returncode != 0:
            raise SystemExit(f"exporters_default_model: {what} failed; see {log}")


def measure(name: str, model: Path, artifact: Path, reference: list[dict], tokens: int) -> dict:
    """Compile `model`, time it and onnxruntime's session, and compare greedy tokens."""
    start = time.perf_counter()
    result = subprocess.run([str(LLMC), "compile", str(model), "-o", str(artifact), "--quiet"],
                            capture_output=True, text=True)
    compile_s = time.perf_counter() - start
    row = {"export": name, "onnx_mb": round(sum(f.stat().st_size for f in model.parent.iterdir()
                                                if f.name.startswith("model.onnx")) / 2**20)}
    if result.returncode != 0:
        return {**row, "error": result.stderr.strip()}
    row.update(llmc_compile_s=compile_s, onnxruntime_session_s=time_onnxruntime(model),
               artifact_mb=round(sum(f.stat().st_size for f in artifact.iterdir()) / 2**20))
    llmc = Model(artifact)
    try:
        ours = llmc.generate([r["prompt_ids"] for r in reference], max_tokens=tokens)
    finally:
        llmc.close()
    # transformers stops at eos; llmc generates all `tokens`: compare what both generated.
    row["prompts_equal"] = sum(o[:len(r["tokens"])] == r["tokens"]
                               for o, r in zip(ours, reference))
    row["prompts"] = len(reference)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--keep", type=Path, help="work in DIR and keep the exports")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    say = (lambda text: None) if args.quiet or args.json else (
        lambda text: print(f"exporters_default_model: {text}", file=sys.stderr, flush=True))
    for venv in (".venv-optimum", ".venv-genai"):
        if not (ROOT / venv).exists():
            print(f"exporters_default_model: {venv} is missing: run bash scripts/setup.sh "
                  "exporters", file=sys.stderr)
            return 1

    with tempfile.TemporaryDirectory() as temporary:
        work = args.keep or Path(temporary)
        work.mkdir(parents=True, exist_ok=True)
        say("transformers reads the GGUF and generates the reference tokens")
        run([str(ROOT / ".venv-optimum/bin/python"), str(ROOT / "scripts/exporters/default_model.py"),
             str(default_gguf_path()), str(work), "--tokens", str(args.tokens),
             *[arg for prompt in PROMPTS for arg in ("--prompt", prompt)]],
            "transformers", work / "transformers.log")
        reference = json.loads((work / "reference.json").read_text())
        rows = []
        for name, (command, model) in exports(work).items():
            say(f"{name}: exporting")
            run(command, name, work / f"{name.replace(' ', '-')}.log")
            say(f"{name}: compiling and generating")
            rows.append(measure(name, model, work / f"{name.replace(' ', '-')}.llmc", reference,
                                args.tokens))

    machine = f"{platform.machine()}, {platform.processor() or platform.node()}"
    if args.json:
        print(json.dumps({"machine": machine, "tokens": args.tokens, "exports": rows}, indent=2))
        return 0
    print(f"{'export':<16} {'onnx MB':>7} {'llmc compile s':>14} {'ORT session s':>13} "
          f"{'ratio':>6} {'greedy = transformers':>21}")
    for row in rows:
        if "error" in row:
            print(f"{row['export']:<16} {row['onnx_mb']:>7} refused: {row['error']}")
            continue
        print(f"{row['export']:<16} {row['onnx_mb']:>7} {row['llmc_compile_s']:>14.2f} "
              f"{row['onnxruntime_session_s']:>13.2f} "
              f"{row['llmc_compile_s'] / row['onnxruntime_session_s']:>5.1f}x "
              f"{row['prompts_equal']:>12}/{row['prompts']} prompts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
