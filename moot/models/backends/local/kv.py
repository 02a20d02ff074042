"""What the embedded model's KV cache holds, per sequence, and decoding into several at once.

llama-cpp-python generates in sequence 0 of its llama.cpp context and keeps there the longest
prefix of the next prompt that the sequence already holds. moot adds two things:
- a prompt that leaves the conference document for another one (the assessor's own document)
  first parks the document's KV state in memory (`llama_state_seq_get_data`), and the next
  prompt that goes on with the document takes it back (`Sequences.prepare`) instead of
  evaluating it again. Copied out rather than kept in another sequence: the other prompt then
  fills the cache as it would have, so its log-probabilities are those it always had (llama.cpp's
  differ by up to a few tenths of a nat on unlikely tokens when other cells precede a prompt's);
- the context is opened with several sequences over one unified cache (`kv_unified`: copying a
  sequence shares its cells), so closed questions branch off the prefix they share, each branch
  in a sequence of its own, and are evaluated in one decode (`Sequences.decode`,
  moot.models.backends.local.likelihood).
"""

from __future__ import annotations

import contextlib
import ctypes
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Sequence, TypeVar

import numpy as np

SEQUENCES = 32  # sequences of the context: 0 (llama-cpp-python's), then branches
PARKED = 2  # parked prefixes kept at most (the conference document, and one more)
MIN_PARK = 64  # a prompt that drops at least this many held tokens, and most of them, parks them first
T = TypeVar("T")


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def open_sequences(llm: Any, count: int = SEQUENCES) -> None:
    """Reopen `llm`'s (still unused) context with `count` sequences over one unified KV cache of
    the same size; llama-cpp-python's constructor has no parameter for it."""
    from llama_cpp import _internals

    params = llm.context_params
    params.n_seq_max, params.kv_unified = count, True
    context = _internals.LlamaContext(model=llm._model, params=params, verbose=llm.verbose)
    old, llm._ctx = llm._ctx, llm._stack.enter_context(contextlib.closing(context))
    old.close()


@dataclass
class Parked:
    """A prefix's tokens and its KV state, kept while sequence 0 holds another prompt."""

    tokens: list[int]
    state: bytes


@dataclass(frozen=True)
class Row:
    """One token of a batch: where it goes (position, sequences) and whether its logits are read."""

    token: int
    pos: int
    seqs: tuple[int, ...]
    logits: bool = False


class Sequences:
    """The sequences of one model's context: sequence 0 is llama-cpp-python's (`llm.input_ids`
    up to `llm.n_tokens`), the others hold branches while a batch is decoded."""

    def __init__(self, llm: Any):
        import llama_cpp

        self.llm = llm
        self.count = int(llama_cpp.llama_n_seq_max(llm.ctx))
        self.parked: list[Parked] = []  # least recently parked first
        self.answers: dict[tuple[object, ...], list[float]] = {}  # the rest of the last batch of questions read
        self._batch: Any = None

    def held(self) -> list[int]:
        """The tokens sequence 0 holds."""
        held: list[int] = self.llm.input_ids[: self.llm.n_tokens].tolist()
        return held

    def free(self) -> list[int]:
        """Sequences for branches (none when the context has only llama-cpp-python's)."""
        return list(range(1, self.count))

    # ------------------------------------------------------------------ parking
    def prepare(self, tokens: Sequence[int]) -> None:
        """Before sequence 0 goes to `tokens`: park the held tokens when it would drop most of
        them (another document, not a branch off this one), and take back a parked prefix that
        `tokens` continue further than the held ones."""
        held = self.held()
        kept = common_prefix(held, tokens)
        best = max(self.parked, key=lambda p: common_prefix(p.tokens, tokens), default=None)
        if len(held) - kept >= max(MIN_PARK, len(held) // 2):
            self.park(held)
        if best is not None and common_prefix(best.tokens, tokens) > kept:
            self.restore(best)

    def park(self, tokens: list[int]) -> None:
        """Keep what sequence 0 holds (`tokens`) in memory; a parked prefix of it is superseded."""
        import llama_cpp

        if any(p.tokens[: len(tokens)] == tokens for p in self.parked):
            return  # a parked one holds them already
        self.parked = [p for p in self.parked if tokens[: len(p.tokens)] != p.tokens]
        del self.parked[: len(self.parked) - PARKED + 1]  # the least recently parked go
        ctx = self.llm.ctx
        self.llm._ctx.kv_cache_seq_rm(0, len(tokens), -1)
        state = (ctypes.c_uint8 * llama_cpp.llama_state_seq_get_size(ctx, 0))()
        size = llama_cpp.llama_state_seq_get_data(ctx, state, len(state), 0)
        # copied as bytes at once (slicing a ctypes byte array makes a list of ints: ~20 ns a byte)
        self.parked.append(Parked(list(tokens), ctypes.string_at(state, size)))

    def restore(self, parked: Parked) -> None:
        """Sequence 0 holds `parked`'s tokens again, from its state: nothing is evaluated. Where
        the cache has no room for it, sequence 0 is emptied (its prompt is evaluated)."""
        import llama_cpp

        if parked in self.parked:  # (parking the held tokens may have let it go)
            self.parked.remove(parked)
        self.llm._ctx.kv_cache_seq_rm(0, -1, -1)
        state = (ctypes.c_uint8 * len(parked.state)).from_buffer_copy(parked.state)
        done = llama_cpp.llama_state_seq_set_data(self.llm.ctx, state, len(state), 0)
        self.set_held(parked.tokens if done else [])

    def set_held(self, tokens: Sequence[int]) -> None:
        """Tell llama-cpp-python what sequence 0 holds; its logits are not the last token's."""
        self.llm.input_ids[: len(tokens)] = tokens
        self.llm.n_tokens = len(tokens)
        self.llm._requires_eval = True

    # ------------------------------------------------------------------ decoding
    def hold(self, tokens: Sequence[int]) -> int:
        """Truncate sequence 0 to its longest prefix shared with `tokens`; how many it keeps
        (0 where the cache cannot drop a part of a sequence: then it is emptied)."""
        keep = common_prefix(self.held(), tokens)
        if keep > 0 and not self.llm._ctx.kv_cache_seq_rm(0, keep, -1):
            keep = 0
        if keep == 0:
            self.llm._ctx.kv_cache_seq_rm(0, -1, -1)
        self.llm.n_tokens = keep
        return keep

    def branch(self, seqs: Sequence[int], length: int) -> None:
        """Sequences `seqs` start as sequence 0's first `length` tokens (shared cells)."""
        for s in seqs:
            if s != 0:
                self.llm._ctx.kv_cache_seq_cp(0, s, 0, length)

    def unbranch(self, seqs: Sequence[int], length: int) -> None:
        """Drop the branches: sequence 0 back to its first `length` tokens, the others emptied."""
        for s in seqs:
            self.llm._ctx.kv_cache_seq_rm(s, length if s == 0 else -1, -1)

    def decode(self, rows: Sequence[Row]) -> list[np.ndarray]:
        """Decode `rows` in order (in batches of the context's size); the log-softmax of the
        logits of each row that asks for them, in order."""
        return self.decode_with(rows, log_softmax)

    def decode_with(self, rows: Sequence[Row], read: Callable[[Any, int], T]) -> list[T]:
        """Decode `rows` as `decode` does; `read(llm, index)` of each row that asks for logits,
        called while its batch's logits are there (e.g. a greedy pick instead of the log-softmax)."""
        found: list[T] = []
        size = self.llm.n_batch
        for start in range(0, len(rows), size):
            chunk = rows[start:start + size]
            batch = self._fill(chunk)
            self.llm._ctx.decode(batch)
            found += [read(self.llm, i) for i, row in enumerate(chunk) if row.logits]
        return found

    def _fill(self, rows: Sequence[Row]) -> Any:
        from llama_cpp import _internals

        if self._batch is None:
            self._batch = _internals.LlamaBatch(n_tokens=self.llm.n_batch, embd=0, n_seq_max=self.count,
                                                verbose=False)
        b = self._batch.batch
        b.n_tokens = len(rows)
        for i, row in enumerate(rows):
            b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = row.token, row.pos, len(row.seqs), row.logits
            for j, s in enumerate(row.seqs):
                b.seq_id[i][j] = s
        return self._batch


def log_softmax(llm: Any, index: int) -> np.ndarray:
    """Log-softmax of the logits of the batch's row `index`, in double precision."""
    import llama_cpp

    ptr = llama_cpp.llama_get_logits_ith(llm.ctx, index)
    logits: np.ndarray = np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).astype(np.float64)
    top = logits.max()
    result: np.ndarray = logits - (top + math.log(np.exp(logits - top).sum()))
    return result


@lru_cache(maxsize=4)
def sequences_of(llm: Any) -> Sequences:
    """The one `Sequences` of a loaded model."""
    return Sequences(llm)
