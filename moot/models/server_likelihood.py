"""Closed choices and scores from a server's top log-probabilities (OpenAI-compatible APIs).

A server gives the top-N log-probabilities of the next token, not the probability of a given
text, and llama-cpp-python's `echo` path that would score a given text is unusably slow on long
prompts (issue 11 FINDINGS §6). So options are read from first tokens: a token counts for the one
option it begins or writes out (" yes", "Yes", "A." for option "A"; case-insensitively, leading
spaces aside, so a separator token " " begins every option). Where a
token could begin several options (a separator " " before every option on a Gemma tokenizer, "1"
of "1" and "10"), the prompt is extended by that token and asked again: document form only (a
raw-text completion can be extended; a chat reply cannot be prefilled), at most MAX_STEPS times;
never by a token that writes nothing (see `writes_nothing_new`).
In chat form such a token decides nothing and, unless its probability is negligible, the choice
is NotSupported (the caller falls back to structured output). So is an answer without readable
log-probabilities (`NoLogprobs`: none, null, NaN, a string, a positive number, a malformed list),
always the same way. A token written out as one string
that other options extend ("1" where "10" exists) means that option when the longer ones appear
as tokens of their own among the top-N (tokenizers that write "10" as one token).

An option absent from every list read gets the smallest log-probability seen there, an upper
bound, and is listed in `bounded`. When the options found hold less than NEGLIGIBLE of the
probability (the reply would begin with something else: a chat reply that opens with prose), there
is nothing to read: the choice is NotSupported, and the caller asks for structured output. Except
in a document when every option is listed (none bounded): there the options are read whatever
their share, as the embedded model's likelihood reads them (the conference judge's " agree" and
" disagree" after the participants' names held 0.01-0.03 on the embedded model, yet both ranked
among its top 20 tokens).
"""

from __future__ import annotations

import math
from typing import Awaitable, Callable, Sequence

from moot.models.requests import NotSupported

TopLogprobs = Callable[[str], Awaitable[dict[str, float]]]  # text added to the prompt -> {token: logprob}
MAX_STEPS = 3
SEPARATOR = " "  # what a document writes between a prompt and its answer
NEGLIGIBLE = 0.02  # an unresolved token below this probability is ignored; options below it: no reading


def _lse(values: Sequence[float]) -> float:
    values = [v for v in values if v > -math.inf]
    if not values:
        return -math.inf
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


class NoLogprobs(NotSupported):
    """The server's answer holds no log-probabilities moot can read — none, null, NaN, a string, a
    positive number, a malformed list: one path for all, NotSupported for good with that server
    (the caller asks for structured output instead)."""


def logprob(value: object) -> float:
    """A log-probability as a server wrote it, checked: a number, not NaN, at most 0 (a rounding
    error above 0 is read as 0), -infinity allowed (probability 0). Else NoLogprobs."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value > 1e-6:
        raise NoLogprobs(f"the server's log-probabilities are unreadable (a log-probability of {value!r:.40})")
    return min(float(value), 0.0)


class Reader:
    """Reads the options' log-probabilities through `top` (see the module docstring), from the
    prompt extended by `start`."""

    def __init__(self, top: TopLogprobs, options: Sequence[str], extendable: bool, number: bool, start: str = ""):
        self.top, self.options, self.extendable, self.number = top, list(options), extendable, number
        self.texts = {o: o.strip().lower() for o in options}
        self.steps = 0
        self.floor = 0.0
        self.notes: list[str] = []
        self.start = start
        self.through = ""  # the separator, when it was the likeliest token to begin an option at the start

    async def read(self) -> tuple[dict[str, float], list[str]]:
        found, _ = await self._node(self.start)
        bounded = [o for o, v in found.items() if v == -math.inf]
        seen = sum(math.exp(v) for v in found.values() if v > -math.inf)
        listed = self.extendable and not bounded  # a document's options, each listed: a reading at any share
        if seen < NEGLIGIBLE and not listed:  # the reply begins with something else: bounds are no reading
            raise NotSupported(f"the options hold {seen:.3f} of the server's top log-probabilities: "
                               f"the reply does not begin with one of them")
        return {o: (v if v > -math.inf else self.floor) for o, v in found.items()}, bounded

    def _matches(self, written: str) -> tuple[list[str], list[str]]:
        """(options `written` completes, options it is a strict beginning of)."""
        low = written.lstrip(" ").lower()
        complete, partial = [], []
        for o, text in self.texts.items():
            if text.startswith(low) and len(text) > len(low):
                partial.append(o)
            elif low == text or (low.startswith(text) and not low[len(text)].isalnum()):
                complete.append(o)
        return complete, partial

    async def _node(self, prefix: str) -> tuple[dict[str, float], dict[str, float]]:
        """(log P(option | the prompt extended by `prefix`) as far as the lists tell, the list)."""
        self.steps += 1
        top = await self.top(prefix)
        if not top:
            raise NoLogprobs("the server returned no log-probabilities")
        self.floor = min(self.floor, min(top.values()))
        own = {t.strip().lower() for t in top}
        found: dict[str, list[float]] = {o: [] for o in self.options}
        unresolved: list[tuple[float, str, list[str], list[str]]] = []
        for token, lp in top.items():
            if writes_nothing_new(prefix, token):
                continue
            complete, partial = self._matches(prefix + token)
            if len(complete) + len(partial) == 1:
                found[(complete + partial)[0]].append(lp)
            elif complete and all(self.texts[o].strip() in own for o in partial):
                found[complete[0]].append(lp)  # the longer options are tokens of their own
            elif complete or partial:
                unresolved.append((lp, token, complete, partial))
        first = prefix == self.start and self.steps == 1
        direct = sum(math.exp(lp) for values in found.values() for lp in values)  # options written by one token
        for lp, token, complete, partial in sorted(unresolved, reverse=True):
            if self.extendable and self.steps < MAX_STEPS:
                deeper, listed = await self._node(prefix + token)
                ends = self._ending(deeper, listed, partial)
                for o in complete:
                    found[o].append(lp + ends)
                for o in partial:
                    found[o].append(lp + deeper[o])
                if first and token == SEPARATOR and not complete:
                    through = sum(math.exp(lp + deeper[o]) for o in partial)
                    self.through = SEPARATOR if through > direct else ""
            elif math.exp(lp) >= NEGLIGIBLE:
                raise NotSupported(f"the token {token!r} (p={math.exp(lp):.2f}) begins several options "
                                   f"and a chat reply cannot be extended to tell them apart")
        return {o: _lse(v) for o, v in found.items()}, top

    def _ending(self, deeper: dict[str, float], listed: dict[str, float], partial: list[str]) -> float:
        """log P(the option written so far ends here) = log(1 - P(it goes on)): going on to a
        longer option, or (a number) to any digit."""
        if self.number:
            going_on = sum(math.exp(lp) for t, lp in listed.items() if t[:1].isdigit())
        else:
            going_on = sum(math.exp(deeper[o]) for o in partial)
        return math.log(max(1e-12, 1.0 - going_on))


def writes_nothing_new(prefix: str, token: str) -> bool:
    """A token that tells no option apart: one that writes nothing (a byte fragment or a special
    token; the server lists them as ""), or blank space other than the one separator a document
    writes before an option (two spaces, a second space after one). Extending the prompt by it
    would ask for the same position again or read options written as the document never writes
    them (llama_cpp.server: 0.3 s each), and "" counted the options' probability twice."""
    return not token or (token.isspace() and (token != SEPARATOR or prefix[-1:].isspace()))


async def read_options(top: TopLogprobs, options: Sequence[str], extendable: bool,
                       number: bool = False) -> tuple[dict[str, float], list[str]]:
    """({option: log-probability}, options only bounded) from the server's top log-probabilities."""
    return await Reader(top, options, extendable, number).read()


class Separators:
    """What one server's tokenizer writes before a set of options, learnt from its answers: when a
    document's options are read with more probability through the bare separator than from tokens
    that write them whole (Gemma writes " 7" as " ", "7", but " agree" as one token; a "7" straight
    after the colon is listed too, far less likely), every later reading of the same options starts
    after that token, as the embedded model reads
    them (the options as the document writes them, after a space). Each then costs one top list
    less (llama_cpp.server sorts its whole vocabulary for every list: about 0.3 s); the
    log-probabilities are then those after the separator."""

    def __init__(self) -> None:
        self.known: dict[tuple[str, ...], str] = {}

    def start(self, options: Sequence[str], extendable: bool) -> str:
        """The text a reading of `options` starts after ("" until one is learnt)."""
        return self.known.get(tuple(options), "") if extendable else ""

    def note(self, options: Sequence[str], extendable: bool) -> dict[str, str]:
        """A reading's note when it starts after a learnt token ({} otherwise)."""
        start = self.start(options, extendable)
        return {"note": f"read after {start!r}, the token this server writes before every option"} if start else {}

    async def read(self, top: TopLogprobs, options: Sequence[str], extendable: bool,
                   number: bool = False) -> tuple[dict[str, float], list[str]]:
        """As read_options, from the learnt start; learns it from a reading without one."""
        start = self.start(options, extendable)
        reader = Reader(top, options, extendable, number, start)
        found = await reader.read()
        if extendable and not start and reader.through:
            self.known[tuple(options)] = reader.through
        return found
