"""Drive a compiled model's ragged, paged step (llmc.runtime.Model.step) from Python, for tests.

The runner plays the part of the C++ generator in a few lines a test can read: it keeps one
block table per live sequence and KV cache group (a model with layers of different windows has
several, model.num_kv_groups; the runner gives nothing back out of a window), hands out KV block
ids from its own free list over the model's num_kv_blocks, and builds the step arrays of
include/llmc/Runtime/StepABI.h.

    runner = PagedRunner(model)
    first = runner.prefill([[1, 2, 3], [4, 5]])   # [2, vocab]: one ragged step, last rows
    more = runner.decode(first.argmax(axis=-1))   # [2, vocab]: one token per sequence
    tokens, logits = PagedRunner(model).greedy([[1, 2, 3], [4, 5]], steps=8)

Argmax ties go to the lowest token id, as in the runtime's generator and numpy.
"""
from __future__ import annotations

import numpy as np


class PagedRunner:
    """The KV blocks and token positions of a batch of sequences on one Model.

    The runner assumes it is the model's only user of the KV cache between prefill() and the
    last decode(): the generator's blocks (Model.generate) are not reserved against it.
    """

    def __init__(self, model):
        self.model = model
        self.block_size = model.block_size
        self.num_groups = model.num_kv_groups
        self.free_blocks = list(range(model.num_kv_blocks - 1, -1, -1))  # pop() gives 0 first
        # Per KV cache group, per sequence, its blocks in position order.
        self.block_tables: list[list[list[int]]] = [[] for _ in range(self.num_groups)]
        self.lengths: list[int] = []  # per sequence, the positions in the cache
        # The step's LoRA adapters, and each sequence's index into them (-1: none).
        self._lora_adapters: list = []
        self._lora_index: list[int] = []

    def _reserve(self, seq: int, num_positions: int) -> None:
        """Grow sequence `seq`'s block tables to hold `num_positions` positions."""
        for tables in self.block_tables:
            while len(tables[seq]) * self.block_size < num_positions:
                if not self.free_blocks:
                    raise RuntimeError("PagedRunner: out of KV blocks")
                tables[seq].append(self.free_blocks.pop())

    def _step(self, new_tokens: list[list[int]]) -> np.ndarray:
        """One step appending new_tokens[n] to sequence n; the logits of each one's last row."""
        assert len(new_tokens) == len(self.lengths) and all(new_tokens)
        tokens, positions, cu_seqlens_q, context_lens = [], [], [0], []
        lora_indices = []
        slots = [[] for _ in range(self.num_groups)]  # each group's run of slots
        for seq, chunk in enumerate(new_tokens):
            begin = self.lengths[seq]
            self._reserve(seq, begin + len(chunk))
            for position in range(begin, begin + len(chunk)):
                positions.append(position)
                for group, tables in enumerate(self.block_tables):
                    slots[group].append(tables[seq][position // self.block_size]
                                        * self.block_size + position % self.block_size)
            tokens.extend(chunk)
            lora_indices += [self._lora_index[seq]] * len(chunk)
            cu_seqlens_q.append(len(tokens))
            context_lens.append(begin + len(chunk))
        width = max(len(table) for tables in self.block_tables for table in tables)
        # Padding entries point at block 0; the step never reads past context_lens[n]. Group g's
        # rows follow group g - 1's.
        num_seqs = len(new_tokens)
        block_tables = np.zeros((self.num_groups * num_seqs, width), dtype=np.int32)
        for group, tables in enumerate(self.block_tables):
            for seq, table in enumerate(tables):
                block_tables[group * num_seqs + seq, :len(table)] = table
        slots = [slot for group_slots in slots for slot in group_slots]
        logits_indices = np.array(cu_seqlens_q[1:], dtype=np.int32) - 1
        lora = {} if not self._lora_adapters else {"lora_indices": lora_indices,
                                                    "lora_adapters": self._lora_adapters}
        logits = self.model.step(tokens, positions, cu_seqlens_q, context_lens, block_tables,
                                 slots, logits_indices, **lora)
        self.lengths = context_lens
        return logits

    def prefill(self, prompts: list[list[int]], loras: list | None = None) -> np.ndarray:
        """Start one sequence per prompt (dropping any earlier ones) with ONE ragged step over
        all the prompts; returns the [len(prompts), vocab] logits of each prompt's last token.
        loras: each sequence's LoRA adapter (Model.load_lora) or None, for every step."""
        self.release()
        loras = loras or [None] * len(prompts)
        self._lora_adapters = list({id(a): a for a in loras if a is not None}.values())
        self._lora_index = [-1 if a is None else
                            next(i for i, b in enumerate(self._lora_adapters) if b is a)
                            for a in loras]
        self.block_tables = [[[] for _ in prompts] for _ in range(self.num_groups)]
        self.lengths = [0 for _ in prompts]
        return self._step([[int(t) for t in prompt] for prompt in prompts])

    def decode(self, tokens) -> np.ndarray:
        """Append one token to each live sequence (in prefill order); returns [N, vocab] logits."""
        return self._step([[int(t)] for t in np.asarray(tokens).reshape(-1)])

    def release(self) -> None:
        """Give every sequence's blocks back to the free list."""
        for tables in self.block_tables:
            for table in tables:
                self.free_blocks.extend(reversed(table))
        self.block_tables = [[] for _ in range(self.num_groups)]
        self.lengths = []

    def greedy(self, prompts: list[list[int]], steps: int
               ) -> tuple[list[list[int]], list[np.ndarray]]:
        """`steps` greedy tokens per prompt: a prefill, then steps - 1 decode steps each fed the
        previous argmax. Returns (the tokens of each prompt, the [N, vocab] logits of each step);
        the blocks are released at the end."""
        if steps < 1:
            raise ValueError(f"steps must be at least 1, got {steps}")
        step_logits = [self.prefill(prompts)]
        while len(step_logits) < steps:
            step_logits.append(self.decode(step_logits[-1].argmax(axis=-1)))
        self.release()
        tokens = np.stack([logits.argmax(axis=-1) for logits in step_logits], axis=1)
        return tokens.tolist(), step_logits
