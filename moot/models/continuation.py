"""Continuing a document with a base model: logits processors and the cut to a whole sentence.

Measured on the embedded Gemma 3 270M over 3 seeds x 19 conference turns (issue 11 FINDINGS §2):
stop at a blank line and at every speaker label; no newline and no speaker name as the first
token; no newline or end of text before 20 tokens (nor, since, before a sentence ends); never complete a run of 7 word tokens found in
the header or earlier turns (punctuation-only tokens skipped on both sides, so a comma does not
evade it); cut to the last complete sentence. Together: no turn echoed its instructions,
impersonated another speaker or ended mid-sentence, and none copied an earlier turn (50 % did
without the n-gram block).

The processors follow llama-cpp-python's LogitsProcessor protocol: `(input_ids, scores) ->
scores`, with `input_ids` the prompt and the tokens generated so far.
"""

from __future__ import annotations

import math
import re
import zlib
from array import array
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence

from autogen_core.models import CreateResult, RequestUsage

from moot.models.requests import Continue, MeasuredResult

if TYPE_CHECKING:  # the processors get llama.cpp's numpy arrays; the HTTP backends never import numpy
    import numpy as np

ABBREVIATION = re.compile(r"\b(?:Dr|Mr|Ms|Mrs|Prof|St|vs|etc|e\.g|i\.e|No|Fig)\.$")
SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019)\]]*(?=\s|$)")
SENTENCE_LAST = set(".!?\"'\u201d\u2019)]")


def cut_to_sentence(text: str) -> str:
    """`text` up to its last complete sentence ('' when it has none). A full stop after a title
    or common abbreviation (Dr., e.g.) does not end a sentence."""
    body, last = text.rstrip(), None
    for match in SENTENCE_END.finditer(body):
        if not ABBREVIATION.search(body[: match.start() + 1]):
            last = match.end()
    return body[:last].rstrip() if last else ""


def ends_sentence(text: str) -> bool:
    body = text.rstrip()
    # A sentence end (SENTENCE_END) ends in one of these: text ending otherwise needs no scan.
    return body[-1:] in SENTENCE_LAST and cut_to_sentence(body) == body


class MinTokens:
    """No newline and no end of text before `k` tokens were generated, nor (given `ends`, which
    tells whether the generated tokens end a sentence) before a sentence is complete: a turn that
    stops at a blank line stops after a whole sentence, not after a heading-like fragment (seen on
    the embedded model: "The topic 1: development of a set of criteria ... (I)")."""

    def __init__(self, k: int, prompt_len: int, banned: Sequence[int],
                 ends: Optional[Callable[[Iterable[int]], bool]] = None):
        self.k, self.prompt_len, self.banned, self.ends = k, prompt_len, list(banned), ends

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        generated = input_ids[self.prompt_len:]
        if len(generated) < self.k or (self.ends is not None and not self.ends(generated)):
            scores[self.banned] = -math.inf
        return scores


class BanFirst:
    """None of `banned` as the first generated token (a newline: an empty turn; a speaker's
    name: a roster instead of a turn)."""

    def __init__(self, prompt_len: int, banned: Sequence[int]):
        self.prompt_len, self.banned = prompt_len, list(banned)

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        if len(input_ids) == self.prompt_len:
            scores[self.banned] = -math.inf
        return scores


class NoRepeatNGram:
    """Never complete a run of `n` word tokens that occurs in the reference (`index`: every n-1
    word tokens mapped to the tokens that followed them). Only this reply's own tokens form the
    lookup key, and punctuation-only tokens are skipped on both sides."""

    def __init__(self, n: int, index: dict[tuple[int, ...], set[int]], prompt_len: int, word: np.ndarray):
        self.n, self.index, self.prompt_len, self.word = n, index, prompt_len, word

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        generated = [int(t) for t in input_ids[self.prompt_len:] if self.word[t]]
        if len(generated) >= self.n - 1:
            banned = self.index.get(tuple(generated[len(generated) - self.n + 1:]))
            if banned:
                scores[list(banned)] = -math.inf
        return scores


def ngram_index(tokens: Iterable[int], n: int, word: np.ndarray) -> dict[tuple[int, ...], set[int]]:
    """Every run of n-1 word tokens of `tokens`, mapped to the word tokens that followed it."""
    words = [int(t) for t in tokens if word[t]]
    index: dict[tuple[int, ...], set[int]] = {}
    for i in range(len(words) - n + 1):
        index.setdefault(tuple(words[i:i + n - 1]), set()).add(words[i + n - 1])
    return index


def first_tokens(llm: Any, words: Iterable[str]) -> list[int]:
    """The first token of each word as it follows a label (" Dr", " Prof"), and of its first word."""
    found: set[int] = set()
    for text in words:
        for variant in {text.strip(), text.strip().split(" ")[0]}:
            if variant:
                found.add(llm.tokenize((" " + variant).encode("utf-8"), add_bos=False)[0])
    return sorted(found)


def prompt_seed(seed: int, tokens: Sequence[int]) -> int:
    """`seed` mixed with the prompt's tokens, deterministically (a 31-bit CRC of both as 64-bit
    integers): the embedded model's seed for a prompt, computed alike for a server."""
    return zlib.crc32(array("q", [seed, *tokens]).tobytes()) & 0x7FFFFFFF


def continuation_result(text: str, finish: str, sentence: bool, usage: RequestUsage) -> MeasuredResult:
    """The reply of a continuation: cut to its last complete sentence when it does not end one
    (the token bound, or a stop, fell mid-sentence); kept whole when it has no complete sentence."""
    body = text.strip()
    cut = cut_to_sentence(body) if sentence else body
    detail: dict[str, Any] = {"method": "completion"}
    if cut and cut != body:
        detail.update(cut=True, uncut=body)
        body = cut
    elif sentence and not cut and body:
        detail["note"] = "no complete sentence within the token bound"
    return MeasuredResult(content=body, usage=usage, cached=False, detail=detail,
                          finish_reason="length" if finish == "length" else "stop")


def served_continuation(said: CreateResult, request: Continue, applied: bool = False) -> MeasuredResult:
    """A server's reply to `request` as a continuation; a server applies no logits processors
    (unless `applied`: llama-server's own fields stood for them), which its detail notes when the
    request asked for them."""
    result = continuation_result(said.content if isinstance(said.content, str) else "", said.finish_reason,
                                 request.sentence, said.usage)
    if not applied and (request.min_tokens or request.ban_first or request.no_repeat_ngram):
        result.detail["note"] = "logits processors are not applied by a server"
    return result
