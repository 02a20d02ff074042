"""Log-probabilities of given continuations from an in-process llama.cpp model.

Works on a Llama created with the default `logits_all=False` (never True: on the embedded model
that doubles prompt-evaluation time, costs ~2 GB per 1000 tokens and llama-cpp-python's echo
logprobs path sorts the whole vocabulary in Python for every prompt token; issue 11 FINDINGS §4).
It evaluates the prompt once, reusing the KV-cache prefix left by the previous call exactly as
`Llama.generate` does, reads the last position's logits (`llama_get_logits_ith(ctx, -1)`), and
decodes only the tokens where the continuations branch: one decode per distinct proper prefix.

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
from functools import lru_cache
from typing import Any, Optional, Sequence

import numpy as np


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def last_logprobs(llm: Any) -> np.ndarray:
    """Log-softmax of the logits of the last evaluated position."""
    import llama_cpp

    ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    logits = np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).astype(np.float64)
    top = logits.max()
    return logits - (top + math.log(np.exp(logits - top).sum()))


def eval_to(llm: Any, tokens: Sequence[int]) -> int:
    """Make the context hold exactly `tokens`, with fresh logits for the last one: keeps the
    longest common prefix with what is evaluated and decodes the rest (at least one token).
    Returns how many tokens it decoded."""
    keep = min(common_prefix(llm.input_ids[: llm.n_tokens].tolist(), tokens), len(tokens) - 1)
    if keep > 0 and not llm._ctx.kv_cache_seq_rm(-1, keep, -1):
        keep = 0  # partial KV removal unsupported (some recurrent caches)
    if keep == 0:
        llm.reset()
    llm.n_tokens = keep
    llm.eval(list(tokens[keep:]))
    return len(tokens) - keep


def sequence_logprobs(llm: Any, sequences: Sequence[Sequence[int]],
                      continuing: Optional[np.ndarray] = None, decoded: Optional[list[int]] = None) -> list[float]:
    """log P(each sequence's tail | the prefix all share), charged for ending where another goes
    on (see the module docstring); `continuing`: a vocabulary mask of tokens that would extend a
    continuation (default: the other continuations' next tokens). `decoded` (a list) gets the
    number of tokens each decode evaluated."""
    k = min(common_prefix(sequences[0], s) for s in sequences)
    k = min(k, min(len(s) for s in sequences) - 1)  # every continuation keeps a token of its own
    shared = list(sequences[0][:k])
    tails = [tuple(s[k:]) for s in sequences]
    following: dict[tuple, set[int]] = {}
    for tail in tails:
        for i in range(len(tail)):
            following.setdefault(tail[:i], set()).add(tail[i])
    step: dict[tuple, dict[int, float]] = {}
    ending: dict[tuple, float] = {}
    for prefix in sorted(following, key=len):  # shorter first: each decode extends the cached prefix
        count = eval_to(llm, shared + list(prefix))
        if decoded is not None:
            decoded.append(count)
        lp = last_logprobs(llm)
        step[prefix] = {t: float(lp[t]) for t in following[prefix]}
        if prefix in tails:  # a complete continuation that others extend: it must end here
            mass = lp[continuing] if continuing is not None else lp[list(following[prefix])]
            ending[prefix] = math.log(max(1e-300, 1.0 - float(np.exp(mass).sum())))
    return [sum(step[t[:i]][t[i]] for i in range(len(t))) + ending.get(t, 0.0) for t in tails]


def option_logprobs(llm: Any, prompt: str, options: Sequence[str], sep: str = "") -> dict[str, float]:
    """Total log-probability of each option's text (`sep` + option) right after `prompt`."""
    sequences = [llm.tokenize((prompt + sep + o).encode("utf-8")) for o in options]
    return dict(zip(options, sequence_logprobs(llm, sequences)))


class TokenClasses:
    """Vocabulary masks read once per model (one pass over the vocabulary, ~1 s for 262k tokens):
    `word` (a letter or digit in the text), `newline` (text starts with a newline after spaces),
    `digit` (text starts with a digit: it would continue a number)."""

    def __init__(self, llm: Any):
        texts = [llm.detokenize([i]).decode("utf-8", "ignore") for i in range(llm.n_vocab())]
        self.word = np.array([any(c.isalnum() for c in t) for t in texts])
        self.newline = np.flatnonzero([t.lstrip(" ").startswith("\n") for t in texts])
        self.digit = np.array([t[:1].isdigit() for t in texts])


@lru_cache(maxsize=4)
def token_classes(llm: Any) -> TokenClasses:
    return TokenClasses(llm)
