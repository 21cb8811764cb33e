# %% [markdown]
# # llmc from Python
#
# A notebook-style tour (the `# %%` cells run in Jupyter, VS Code or as a plain script) of
# llmc's Python API, which follows vLLM's: `LLM` for offline batches, `SamplingParams`,
# `RequestOutput`, and `AsyncLLM` for streaming. Install the package first:
#
#     bash scripts/setup.sh && pip install .        # the llmc command and the package
#     bash scripts/run-default-model.sh              # the default model in models/
#
# then `python examples/python/quickstart.py`.

# %%
import asyncio
from pathlib import Path

from llmc import LLM, AsyncLLM, SamplingParams

MODEL = Path(__file__).resolve().parents[2] / "models" / "smollm2-135m" / "model.onnx"

# %% [markdown]
# `LLM` takes an ONNX file (compiled on first use, then cached under ~/.cache/llmc by content)
# or an artifact directory that `llmc compile` wrote. Engine arguments have vLLM's names.

# %%
llm = LLM(MODEL, max_num_seqs=64, kv_cache_memory="1GiB")

# %% [markdown]
# ## A batch of prompts
# Every prompt is submitted at once; the engine batches them continuously. A progress bar
# counts the finished requests.

# %%
prompts = ["The capital of France is", "The three primary colors are", "def fibonacci(n):"]
outputs = llm.generate(prompts, SamplingParams(temperature=0, max_tokens=32))
for output in outputs:
    print(f"{output.prompt!r} -> {output.outputs[0].text!r}")

# %% [markdown]
# ## Sampling: several samples per prompt, reproducible by seed, with logprobs

# %%
params = SamplingParams(n=3, temperature=0.8, top_p=0.95, seed=42, max_tokens=24, logprobs=2)
(output,) = llm.generate("Once upon a time", params, use_tqdm=False)
for sample in output.outputs:
    print(f"[{sample.index}] {sample.text!r} (cumulative logprob {sample.cumulative_logprob:.2f})")
first_position = output.outputs[0].logprobs[0]
print({token: (round(entry.logprob, 3), entry.decoded_token)
       for token, entry in first_position.items()})

# %% [markdown]
# ## Chat, through the model's chat template

# %%
conversation = [{"role": "user", "content": "Write a haiku about autumn."}]
(answer,) = llm.chat(conversation, SamplingParams(temperature=0, max_tokens=96,
                                                  repetition_penalty=1.2))
print(answer.outputs[0].text)
print("finish reason:", answer.outputs[0].finish_reason)

# %% [markdown]
# ## Stop strings

# %%
(listed,) = llm.generate("Here is a list of fruits:\n1.", SamplingParams(
    temperature=0, max_tokens=64, stop=["\n4."]), use_tqdm=False)
print(repr(listed.outputs[0].text), "stopped at", repr(listed.outputs[0].stop_reason))
llm.shutdown()

# %% [markdown]
# ## Streaming with AsyncLLM
# Each output holds the text so far (print what is new); leaving the loop early aborts the
# request.


# %%
async def stream(prompt: str) -> None:
    engine = AsyncLLM(MODEL)
    try:
        shown = 0
        async for partial in engine.generate(prompt, SamplingParams(max_tokens=48), "story"):
            text = partial.outputs[0].text
            print(text[shown:], end="", flush=True)
            shown = len(text)
        print()
    finally:
        engine.shutdown()


asyncio.run(stream("Write one sentence about the sea:"))
