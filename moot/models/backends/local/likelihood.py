"""Log-probabilities of given continuations from an in-process llama.cpp model.

Works on a Llama created with the default `logits_all=False` (never True: on the embedded model
that doubles prompt-evaluation time, costs ~2 GB per 1000 tokens and llama-cpp-python's echo
logprobs path sorts the whole vocabulary in Python for every prompt token; issue 11 FINDINGS §4).
It keeps the longest prefix of the prompt the context holds, as `Llama.generate` does (or takes
back a parked one: moot.models.backends.local.kv), and evaluates the rest in one decode with the
continuations as branches: each question's own prompt tokens and each path through its
continuations' proper prefixes in a sequence of their own, the logits read after every prefix
(`llama_get_logits_ith`). Several questions that share a prompt prefix (the evaluator's criteria)
are read in the same decode.

Each continuation is scored as the tokens of `tokenize(prompt + continuation)` after the prefix
all of them share, so a space merged into a word (" yes") and a space that is its own token
(Gemma's " 7" = " ", "7") are both scored the way the tokenizer really writes them.

A continuation that is a proper prefix of another ("1" of "10", " agree" of " agreement") is
charged the probability of ending there: times (1 - P(a continuing token)), where the continuing
tokens are the other continuations' next tokens, or (scores) every token that starts with a digit.
A continuation that is a prefix of none is taken as complete (a score's "7" is not charged for a
following "5": an out-of-range "75" is renormalised away with the other numbers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from moot.models.backends.local.kv import Row, Sequences, common_prefix, sequences_of

Tokens = tuple[int, ...]  # a continuation's tokens, or a prefix of them (a node)


@dataclass(frozen=True)
class Question:
    """Continuations of one prompt to score, each as the whole token sequence (prompt, then
    continuation); `continuing`: a vocabulary mask of tokens that would extend a continuation
    (default: the other continuations' next tokens)."""

    sequences: Sequence[Sequence[int]]
    continuing: Optional[np.ndarray] = None

    def key(self) -> tuple[object, ...]:
        """What identifies the question's answer: its sequences, and whether a mask continues them."""
        return (self.continuing is not None, *(tuple(s) for s in self.sequences))


class Tails:
    """A question's continuations after the prefix all share, the prefixes (nodes) after which
    the model's next-token log-probabilities are read, and those read so far."""

    def __init__(self, question: Question):
        sequences = question.sequences
        k = min(common_prefix(sequences[0], s) for s in sequences)
        k = min(k, min(len(s) for s in sequences) - 1)  # every continuation keeps a token of its own
        if k < 1:
            raise ValueError("continuations to score need a prompt token they share")
        self.question, self.shared = question, list(sequences[0][:k])
        self.tails = [tuple(s[k:]) for s in sequences]
        self.following: dict[Tokens, set[int]] = {}
        for tail in self.tails:
            for i in range(len(tail)):
                self.following.setdefault(tail[:i], set()).add(tail[i])
        self.read: dict[Tokens, np.ndarray] = {}
        self.planned: set[Tokens] = set()

    def paths(self) -> list[Tokens]:
        """The nodes no other node extends: decoding each one's tokens reads every node."""
        found: list[Tokens] = []
        for node in sorted(self.following, key=len, reverse=True):
            if not any(p[: len(node)] == node for p in found):
                found.append(node)
        return found

    def rows(self, path: Tokens, at: int, seq: int) -> tuple[list[Row], list[Tokens]]:
        """The branch to `path` from position `at` in sequence `seq`: the question's own prompt
        tokens, then the path, with logits after each node not planned yet. Returns the rows and
        the nodes they read, in order."""
        own = self.shared[at:] + list(path)
        first = len(self.shared) - at - 1  # the row after which the empty node (the prompt) is read
        rows: list[Row] = []
        nodes: list[Tokens] = []
        for i, token in enumerate(own):
            node = path[: i - first] if i >= first else None
            ask = node is not None and node not in self.planned
            if ask and node is not None:
                self.planned.add(node)
                nodes.append(node)
            rows.append(Row(token, at + i, (seq,), ask))
        return rows, nodes

    def logprobs(self) -> list[float]:
        """Each continuation's log-probability from what was read after each node, charged for
        ending where another goes on (see the module docstring)."""
        ending: dict[Tokens, float] = {}
        for node in self.following:
            if node in self.tails:  # a complete continuation that others extend: it must end here
                mask = self.question.continuing
                mass = self.read[node][mask] if mask is not None else self.read[node][list(self.following[node])]
                ending[node] = math.log(max(1e-300, 1.0 - float(np.exp(mass).sum())))
        return [sum(float(self.read[t[:i]][t[i]]) for i in range(len(t))) + ending.get(t, 0.0) for t in self.tails]


def question_logprobs(llm: Any, questions: Sequence[Question], decoded: Optional[list[int]] = None) -> list[list[float]]:
    """log P(each continuation | its question's prompt), for every question, in one decode where
    the context has sequences to spare: the prefix all prompts share is evaluated once (what the
    cache holds of it is kept), and each question's own tokens and continuation prefixes are a
    branch of it in a sequence of its own. `decoded` (a list) gets the tokens decoded."""
    trees = [Tails(q) for q in questions]
    shared = trees[0].shared[: min(common_prefix(trees[0].shared, t.shared) for t in trees)]
    base = shared[:-1]  # each branch starts with a token: its first read
    kv = sequences_of(llm)
    kv.prepare(base)
    keep = kv.hold(base)
    branches = [(tree, path) for tree in trees for path in tree.paths()]
    slots = kv.free() or [0]  # no spare sequence: one branch after another in sequence 0
    count = 0
    for start in range(0, len(branches), len(slots)):
        count += decode_branches(kv, base, keep, list(zip(branches[start:start + len(slots)], slots)))
        keep = len(base)
    kv.set_held(base)
    if decoded is not None:
        decoded.append(count)
    return [tree.logprobs() for tree in trees]


def decode_branches(kv: Sequences, base: list[int], keep: int, group: list[tuple[tuple[Tails, Tokens], int]]) -> int:
    """Decode the branches of `group` ((question, path), sequence) off `base`, of which sequence 0
    holds the first `keep` tokens (the rest is decoded with them), and keep what each reads.
    Returns the tokens decoded."""
    used = [seq for _, seq in group]
    rows = [Row(t, keep + i, tuple(dict.fromkeys([0, *used]))) for i, t in enumerate(base[keep:])]
    kv.branch(used, keep)
    wanted: list[tuple[Tails, Tokens]] = []
    for (tree, path), seq in group:
        branch, nodes = tree.rows(path, len(base), seq)
        rows += branch
        wanted += [(tree, node) for node in nodes]
    try:
        for (tree, node), lp in zip(wanted, kv.decode(rows)):
            tree.read[node] = lp
    finally:
        kv.unbranch(used, len(base))
    return len(rows)


def sequence_logprobs(llm: Any, sequences: Sequence[Sequence[int]],
                      continuing: Optional[np.ndarray] = None, decoded: Optional[list[int]] = None) -> list[float]:
    """log P(each sequence's tail | the prefix all share), charged for ending where another goes
    on (see the module docstring)."""
    return question_logprobs(llm, [Question(sequences, continuing)], decoded)[0]


def option_logprobs(llm: Any, prompt: str, options: Sequence[str], sep: str = "") -> dict[str, float]:
    """Total log-probability of each option's text (`sep` + option) right after `prompt`."""
    sequences = [llm.tokenize((prompt + sep + o).encode("utf-8")) for o in options]
    return dict(zip(options, sequence_logprobs(llm, sequences)))
