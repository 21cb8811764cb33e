"""LLM: offline batched generation with vLLM's API.

    from llmc import LLM, SamplingParams
    llm = LLM("models/smollm2-135m/model.onnx")     # compiled once, then from the cache
    outputs = llm.generate(["Hello, my name is"], SamplingParams(temperature=0, max_tokens=32))
    print(outputs[0].outputs[0].text)
    llm.chat([{"role": "user", "content": "Hi!"}], SamplingParams(max_tokens=64))

An embedding model (exported without its LM head, e.g. optimum's --task feature-extraction)
embeds instead: LLM("qwen3-embedding/model.onnx").embed(["a query"])[0].outputs.embedding;
a sequence classifier (optimum's --task text-classification: a reward model, a reranker)
classifies: LLM("reward/model.onnx").classify(["a prompt"])[0].outputs.probs; a
cross-encoder (a classifier of one label: a reranker) or an embedding model scores texts
against texts: LLM("reranker/model.onnx").score("a query", ["doc 1", "doc 2"]).

The engine runs on its own threads (continuous batching over the paged KV cache); generate()
submits every prompt, waits for their tokens with the GIL released, and shows a progress
bar over the requests unless use_tqdm=False.
"""
from __future__ import annotations

import itertools
import os
import time
from collections import deque
from typing import Optional, Union

from tqdm.auto import tqdm

from llmc.engine_args import open_engine
from llmc.errors import LlmcRuntimeError
from llmc.lora import LoraAdapters, LoRARequest, pop_max_lora_rank
from llmc.outputs import (ClassificationRequestOutput, EmbeddingRequestOutput, PoolingParams,
                          PoolingState, RequestOutput, RequestState, ScoringOutput,
                          ScoringRequestOutput)
from llmc.prompts import Prompt, max_tokens, normalize, params_for, truncated
from llmc.sampling_params import SamplingParams
from llmc.tokenizer import Tokenizer

# Requests submitted at once; the rest wait in Python (the engine refuses more than 4096).
_MAX_IN_FLIGHT = 1024
_POLL_SECONDS = 0.2


class LLM:
    """A model served in this process.

    model: a compiled artifact directory, an .onnx file, or a directory holding model.onnx
    (compiled at opt_level on first use and cached; see llmc.model_cache).
    Engine arguments (vLLM's names): max_num_seqs, max_num_batched_tokens, max_model_len,
    enable_prefix_caching, swap_space (GiB of host memory for preempted sequences' KV
    blocks), seed (for requests that carry none), speculative_config (speculative decoding by
    prompt lookup: {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4,
    "prompt_lookup_min": 2}), scheduling_policy ("fcfs", or "priority": generate()'s
    priorities order the requests, lower first). The KV cache's size: at most one of
    gpu_memory_utilization (a fraction of the memory left after the weights), kv_cache_memory
    (bytes, or text such as "2GiB") and num_kv_blocks; none: 1 GiB on the CPU, 0.9 of free
    memory on a GPU. num_threads: CPU threads (None: one per hardware thread). quiet: no
    compile progress on stderr. hf_overrides (vLLM's, for an ONNX model compiled here):
    {"classifier_from_token": ["no", "yes"]} (with "architectures" and
    "is_original_qwen3_reranker" as vLLM's Qwen3-Reranker recipe gives them) serves an LLM
    reranker as a cross-encoder (`--classifier-from-token no,yes`); {"is_matryoshka": True}
    or {"matryoshka_dimensions": [...]} lets an embedding model's requests ask for fewer
    dimensions (`--matryoshka-dimensions`). enable_lora (an ONNX model compiled here with
    `--enable-lora`) serves LoRA adapters by request (generate()'s and chat()'s
    lora_request), each layer's rank at most max_lora_rank (default 16).
    """

    def __init__(self, model: Union[str, os.PathLike], **engine_args):
        max_lora_rank = pop_max_lora_rank(engine_args)
        self.artifact, self._engine = open_engine(model, **engine_args)
        self._adapters = LoraAdapters(self._engine, max_lora_rank)
        native_tokenizer = self._engine.tokenizer
        self._tokenizer = Tokenizer.wrap(native_tokenizer) if native_tokenizer else None
        self._request_ids = itertools.count()

    @property
    def max_model_len(self) -> int:
        return self._engine.max_model_len

    def get_tokenizer(self) -> Optional[Tokenizer]:
        return self._tokenizer

    def stats(self) -> dict:
        """The engine's counters: steps, tokens computed and cached, preemptions, ..."""
        return self._engine.stats()

    def shutdown(self) -> None:
        """Stops the engine's threads (also when the LLM is garbage-collected)."""
        if self._engine is not None:
            self._engine.shutdown(False)
            self._engine = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.shutdown()

    def generate(self, prompts, sampling_params: Union[None, SamplingParams,
                                                       list[SamplingParams]] = None,
                 *, use_tqdm: bool = True,
                 lora_request: Union[None, LoRARequest, list[Optional[LoRARequest]]] = None,
                 priority: Optional[list[int]] = None) -> list[RequestOutput]:
        """Completes each prompt (text, token ids, or a list of either; see llmc.prompts)
        and returns their RequestOutputs in the prompts' order. lora_request: the LoRA
        adapter every prompt runs with, or one (or None) per prompt (enable_lora).
        priority: one per prompt, lower first (the LLM's scheduling_policy must be
        "priority")."""
        batch = normalize(prompts, self._tokenizer)
        if priority is not None and (len(priority) != len(batch) or not all(
                isinstance(p, int) and not isinstance(p, bool) for p in priority)):
            raise ValueError(f"priority must be a list of {len(batch)} ints, one per prompt")
        return self._run(batch, params_for(sampling_params, len(batch)), use_tqdm,
                         priority or [0] * len(batch), self._loras(lora_request, len(batch)))

    def embed(self, prompts, pooling_params: Optional[PoolingParams] = None, *,
              use_tqdm: bool = True) -> list[EmbeddingRequestOutput]:
        """Embeds each prompt (as generate() takes them) with an embedding model: its last
        token's final hidden state, L2-normalised unless pooling_params says not to, as
        vLLM's LLM.embed with LAST pooling. Returns them in the prompts' order."""
        if not self._live().outputs_hidden_states:
            raise ValueError("embed() needs an embedding model (one exported without its LM "
                             "head, whose output is last_hidden_state); this is " + self._kind())
        return self._pool(prompts, pooling_params, use_tqdm, classify=False)

    def classify(self, prompts, pooling_params: Optional[PoolingParams] = None, *,
                 use_tqdm: bool = True) -> list[ClassificationRequestOutput]:
        """Classifies each prompt (as generate() takes them) with a sequence classifier (an
        export of a *ForSequenceClassification model: a reward model, a reranker): the
        softmax of its score head's logits at the prompt's last token (a sigmoid for one
        label; the logits themselves with use_activation=False), as vLLM's LLM.classify.
        Returns them in the prompts' order; the label names are `LLM.labels`."""
        if not self._live().outputs_class_logits:
            raise ValueError("classify() needs a sequence classifier (an export of a "
                             "*ForSequenceClassification model); this is " + self._kind())
        return self._pool(prompts, pooling_params, use_tqdm, classify=True)

    def score(self, data_1: Union[str, list[str]], data_2: Union[str, list[str]], /, *,
              truncate_prompt_tokens: Optional[int] = None, use_tqdm: bool = True,
              pooling_params: Optional[PoolingParams] = None) -> list[ScoringRequestOutput]:
        """Scores data_1 against data_2, as vLLM's LLM.score: pairwise (1:1, N:N) or the one
        text against each (1:N), one output per pair in order. A cross-encoder (a sequence
        classifier of one label: a reranker) reads each pair as the tokenizer's
        encode(text_1, text_2) and scores it by its label's sigmoid (the logit with
        use_activation=False); an embedding model embeds every text and scores a pair by
        the cosine of the two. truncate_prompt_tokens cuts each prompt on the right to that
        many tokens (-1: max_model_len), as the tokenizer's truncation does."""
        engine = self._live()
        texts_1, texts_2 = _texts("data_1", data_1), _texts("data_2", data_2)
        plan = engine.plan_scoring(texts_1, texts_2,
                                   _truncation(truncate_prompt_tokens, engine.max_model_len))
        activation = (pooling_params or PoolingParams()).engine_options()["pooling"]["activation"]
        options = {"pooling": plan.pooling(activation)}
        prompts = plan.prompts
        rows = self._drive(
            len(prompts), lambda index: engine.submit(prompts[index], options, [], False, None),
            lambda index: PoolingState(str(next(self._request_ids)), prompts[index]), use_tqdm)
        scores = plan.scores([row.outputs.embedding for row in rows])
        outputs = []
        for pair, (first, second) in enumerate(plan.pair_prompts):
            token_ids = prompts[first] + (prompts[second] if second != first else [])
            outputs.append(ScoringRequestOutput(str(next(self._request_ids)),
                                                ScoringOutput(scores[pair]), token_ids, True))
        return outputs

    @property
    def labels(self) -> list[str]:
        """A classifier's label names by index (config.json's id2label); empty otherwise."""
        return list(self._live().labels)

    def _kind(self) -> str:
        engine = self._live()
        if engine.outputs_hidden_states:
            return ("an embedding model (exported without its LM head): it embeds prompts "
                    "(embed())")
        if engine.outputs_class_logits:
            return "a sequence classifier: it classifies prompts (classify())"
        return "a generative model: it generates text (generate())"

    def _pool(self, prompts, pooling_params: Optional[PoolingParams], use_tqdm: bool,
              classify: bool) -> list:
        engine = self._live()
        batch = normalize(prompts, self._tokenizer)
        options = (pooling_params or PoolingParams()).engine_options()

        def submit(index: int) -> int:
            return engine.submit(batch[index].token_ids, options, [], False, None)

        return self._drive(len(batch), submit,
                           lambda index: PoolingState(str(next(self._request_ids)),
                                                      batch[index].token_ids, classify),
                           use_tqdm)

    def chat(self, messages, sampling_params: Union[None, SamplingParams,
                                                    list[SamplingParams]] = None,
             *, use_tqdm: bool = True, chat_template_kwargs: Optional[dict] = None,
             add_generation_prompt: bool = True, tools: Optional[list[dict]] = None,
             lora_request: Union[None, LoRARequest, list[Optional[LoRARequest]]] = None
             ) -> list[RequestOutput]:
        """Answers a conversation (a list of {"role", "content"} messages) or a list of them,
        through the model's chat template as `llmc serve`'s /v1/chat/completions does;
        lora_request as generate() takes it."""
        conversations = messages if messages and isinstance(messages[0], list) else [messages]
        batch = [self._chat_prompt(conversation, chat_template_kwargs, add_generation_prompt,
                                   tools) for conversation in conversations]
        return self._run(batch, params_for(sampling_params, len(batch)), use_tqdm,
                         [0] * len(batch), self._loras(lora_request, len(batch)))

    def _loras(self, lora_request, count: int) -> list:
        """The loaded adapter (or None) of each of `count` prompts."""
        if lora_request is None:
            return [None] * count
        requests = lora_request if isinstance(lora_request, list) else [lora_request] * count
        if len(requests) != count:
            raise ValueError(f"lora_request must be one LoRARequest or a list of {count}, one "
                             "per prompt")
        return [None if request is None else self._adapters.adapter_of(request)
                for request in requests]

    def _chat_prompt(self, conversation: list[dict], chat_template_kwargs: Optional[dict],
                     add_generation_prompt: bool, tools: Optional[list[dict]]) -> Prompt:
        if self._tokenizer is None:
            raise ValueError("this model has no tokenizer: chat needs one")
        context = dict(chat_template_kwargs or {})
        context["messages"] = conversation
        context["add_generation_prompt"] = add_generation_prompt
        if tools is not None:
            context["tools"] = tools
        text = self._live().render_chat(context)
        # The template wrote the special tokens (BOS) itself.
        return Prompt(text, self._tokenizer.encode(text, add_special_tokens=False))

    def _live(self):
        if self._engine is None:
            raise LlmcRuntimeError("the LLM is shut down")
        return self._engine

    def _decode_token(self, token: int) -> Optional[str]:
        return self._tokenizer.decode([token], skip_special_tokens=False) \
            if self._tokenizer else None

    def _run(self, batch: list[Prompt], params: list[SamplingParams], use_tqdm: bool,
             priority: list[int], loras: list) -> list[RequestOutput]:
        engine = self._live()
        if engine.outputs_hidden_states or engine.outputs_class_logits:
            raise ValueError("this is " + self._kind() + ", and generates nothing")
        batch = [truncated(prompt, params[index], engine.max_model_len)
                 for index, prompt in enumerate(batch)]
        return self._drive(
            len(batch),
            lambda index: self._submit(engine, batch[index], params[index], priority[index],
                                       loras[index]),
            lambda index: RequestState(str(next(self._request_ids)), batch[index].text,
                                       batch[index].token_ids, params[index],
                                       self._decode_token), use_tqdm)

    def _drive(self, count: int, submit, make_state, use_tqdm: bool) -> list:
        """Submits requests 0 .. count - 1 (submit(index) -> the engine's id), at most
        _MAX_IN_FLIGHT at once, feeds each its events (make_state(index): a RequestState or
        PoolingState) and returns their outputs in order."""
        engine = self._live()
        results: list = [None] * count
        waiting = deque(range(count))
        running: dict[int, tuple[int, object]] = {}
        bar = _Progress(count, use_tqdm)
        try:
            while waiting or running:
                while waiting and len(running) < _MAX_IN_FLIGHT:
                    index = waiting.popleft()
                    running[submit(index)] = (index, make_state(index))
                for event in engine.poll(_POLL_SECONDS):
                    entry = running.get(event["request"])
                    if entry is None:
                        continue  # a request an earlier, interrupted call aborted
                    index, state = entry
                    state.apply(event)
                    if state.error is not None:
                        raise state.error
                    if state.finished:
                        del running[event["request"]]
                        results[index] = state.output()
                        bar.finished(results[index])
        finally:
            bar.close()
            for engine_id in running:
                engine.abort(engine_id)
        return results

    def _submit(self, engine, prompt: Prompt, params: SamplingParams, priority: int,
                lora) -> int:
        options = params.engine_options(max_tokens(params, prompt, engine.max_model_len),
                                        engine.eos_token_ids)
        if priority:
            options["priority"] = priority
        return engine.submit(prompt.token_ids, options, params.stop_strings,
                             self._tokenizer is not None, params.grammar_spec(),
                             skip_special_tokens=params.skip_special_tokens, lora=lora)


def _texts(name: str, data) -> list[str]:
    """score()'s data_1 or data_2: a text, or a list of texts."""
    texts = [data] if isinstance(data, str) else data
    if not isinstance(texts, (list, tuple)) or not all(isinstance(t, str) for t in texts):
        raise ValueError(f"{name} must be a str or a list of str")
    return list(texts)


def _truncation(truncate_prompt_tokens: Optional[int], max_model_len: int) -> Optional[int]:
    """vLLM's truncate_prompt_tokens: None keeps every token, -1 max_model_len's worth."""
    if truncate_prompt_tokens is None:
        return None
    if (not isinstance(truncate_prompt_tokens, int) or isinstance(truncate_prompt_tokens, bool)
            or not (truncate_prompt_tokens == -1 or 1 <= truncate_prompt_tokens <= max_model_len)):
        raise ValueError(f"truncate_prompt_tokens must be -1 or in [1, {max_model_len}], "
                         f"not {truncate_prompt_tokens!r}")
    return max_model_len if truncate_prompt_tokens == -1 else truncate_prompt_tokens


class _Progress:
    """vLLM's bar: requests done, with the input and output tokens per second so far."""

    def __init__(self, total: int, enabled: bool):
        self.bar = tqdm(total=total, desc="Processed prompts", unit="it",
                        dynamic_ncols=True) if enabled and total else None
        self.start = time.perf_counter()
        self.input_tokens = 0
        self.output_tokens = 0

    def finished(self, output: RequestOutput | EmbeddingRequestOutput) -> None:
        if self.bar is None:
            return
        self.input_tokens += len(output.prompt_token_ids)
        if isinstance(output, RequestOutput):
            self.output_tokens += sum(len(sample.token_ids) for sample in output.outputs)
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        self.bar.set_postfix_str(f"est. speed input: {self.input_tokens / elapsed:.2f} toks/s, "
                                 f"output: {self.output_tokens / elapsed:.2f} toks/s",
                                 refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
