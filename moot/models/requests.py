"""What a model call may ask for beyond a chat reply: a continuation, a closed choice, a score.

There is still one entry point, AutoGen's `ChatCompletionClient.create`: a request rides in
`extra_create_args[REQUEST_ARG]` as a plain dict, so the engine's cache (the dict is part of the
key), retries, concurrency bound and usage wrap every kind the same way, and a client that does
not know the kind raises `NotSupported` (never a silent chat reply).

Prompt forms. A request is answered in *document* form (raw text, no chat template) when it says
`document=True` or the model is a base model; else in *chat* form (the model's chat template, the
reply starting after its generation prompt). The document is the messages' contents joined by a
blank line, then `prefix` on a line of its own when given (e.g. "Answer:", a speaker label). In
chat form the reply begins with `reply_prefix` (prefilled where the backend can; a server's chat
API cannot, so there a choice with a `reply_prefix` is not supported).

- `Continue`: the text that follows, with stop sequences, logits processors (at least
  `min_tokens` before a newline or the end, and then none before a sentence ends; none of `ban_first` nor a newline as the first token;
  no run of `no_repeat_ngram` word tokens copied from `reference`) and, when the token bound is
  reached, a cut to the last complete sentence (recorded as cut).
- `Choose`: which of `options` the model finds most likely right after the prompt (document form:
  `sep` + option after the prefix; chat form: `reply_prefix` + option). The reply's text is the
  chosen option; its detail has the probabilities.
- `Score`: the expectation of an integer score lo..hi under the model's probabilities (G-Eval).

A choice or score asked in document form may name its `batch`: the prefixes of the questions asked
of the same messages together with it (its own among them), each the same request with another
prefix. A backend that reads several branches of one prompt at once (the embedded model) answers
the whole batch when the first of them comes and the others from what it kept; each is still its
own call.

A client's reply to a request is a `MeasuredResult`: a CreateResult with `detail` (see
moot.log.events.CallDetail) holding what was measured.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from functools import lru_cache
from typing import Any, ClassVar, Literal, Mapping, Optional, Sequence, Union

from autogen_core.models import CreateResult, LLMMessage
from pydantic import BaseModel, create_model

REQUEST_ARG = "moot_request"
RequestKind = Literal["continue", "choice", "score"]


class NotSupported(RuntimeError):
    """This backend (or this server) cannot answer this kind of request; the caller falls back."""


@dataclass(frozen=True)
class _Request:
    kind: ClassVar[str] = ""
    document: bool = False
    """Answer in document form (raw text) even on an instruction model."""
    prefix: str = ""
    """Document form: a last line the answer follows (a speaker label, "Answer:")."""
    reply_prefix: str = ""
    """Chat form: how the reply begins before the answer (e.g. '{"attitude": "')."""

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {"kind": self.kind, **{k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}}


@dataclass(frozen=True)
class Continue(_Request):
    kind: ClassVar[RequestKind] = "continue"
    stop: tuple[str, ...] = ()
    """Generation ends before any of these strings."""
    min_tokens: int = 0
    """No newline and no end of text before this many tokens (nor, with `sentence`, after them
    before a sentence ends)."""
    ban_first: tuple[str, ...] = ()
    """Words (e.g. speakers' names) whose first token may not open the reply; a newline never may."""
    no_repeat_ngram: int = 0
    """n > 0: the reply never completes a run of n word tokens found in `reference`."""
    reference: str = ""
    """Text the reply may not copy runs of words from (a transcript's header and earlier turns)."""
    sentence: bool = True
    """End the reply at the end of a sentence: with `min_tokens`, no newline or end of text before
    one ends; when the token bound is reached, the reply ends at its last complete sentence."""
    max_tokens: int = 0
    """A tighter token bound than the role's `max_tokens` for this reply (0: the role's)."""


@dataclass(frozen=True)
class _Closed(_Request):
    batch: tuple[str, ...] = ()
    """Document form: the prefixes of the questions asked together with this one, its own among them."""

    def as_dict(self) -> dict[str, Any]:
        """Without an empty batch: a request asked alone keeps the cache key it always had."""
        data = super().as_dict()
        if not self.batch:
            del data["batch"]
        return data


@dataclass(frozen=True)
class Choose(_Closed):
    kind: ClassVar[RequestKind] = "choice"
    options: tuple[str, ...] = ()
    """The answers, as written after the prompt (without the separating space)."""
    prefix: str = "Answer:"
    sep: str = " "
    """Document form: what stands between the prefix (or the prompt) and an option."""

    def __post_init__(self) -> None:
        if len(self.options) < 2 or len(set(self.options)) != len(self.options):
            raise ValueError(f"a choice needs two or more distinct options, got {self.options!r}")

    def texts(self) -> tuple[str, ...]:
        return self.options


@dataclass(frozen=True)
class Score(_Closed):
    kind: ClassVar[RequestKind] = "score"
    lo: int = 1
    hi: int = 10
    prefix: str = "Score:"
    sep: str = " "

    def __post_init__(self) -> None:
        if not 0 <= self.lo < self.hi:
            raise ValueError(f"a score needs 0 <= lo < hi, got {self.lo}..{self.hi}")

    def texts(self) -> tuple[str, ...]:
        return tuple(str(n) for n in range(self.lo, self.hi + 1))


Request = Union[Continue, Choose, Score]
KINDS: dict[str, type] = {c.kind: c for c in (Continue, Choose, Score)}


def answer_model(request: Request) -> type[BaseModel]:
    """The structured output asked instead of a choice or score a backend cannot measure:
    `{"answer": one of the options}` (a score's options are its integers)."""
    values = tuple(range(request.lo, request.hi + 1)) if isinstance(request, Score) else request.options
    return _answer_model(values)


@lru_cache(maxsize=64)
def _answer_model(values: tuple) -> type[BaseModel]:
    return create_model("Answer", answer=(Literal[values], ...))  # type: ignore[valid-type]


def request_of(extra: Optional[Mapping[str, Any]]) -> Optional[Request]:
    """The request an `extra_create_args` carries, if any."""
    data = (extra or {}).get(REQUEST_ARG)
    if data is None:
        return None
    cls = KINDS.get(data.get("kind", ""))
    if cls is None:
        raise ValueError(f"unknown request kind {data.get('kind')!r}")
    known = {f.name for f in fields(cls)}
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known})


def without_request(extra: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in extra.items() if k != REQUEST_ARG}


class MeasuredResult(CreateResult):
    """A reply with what was measured to get it (moot.log.events.CallDetail's fields)."""

    detail: dict[str, Any] = {}


def document_text(messages: Sequence[LLMMessage], prefix: str = "") -> str:
    """The document form of messages: their contents joined by a blank line, then `prefix`."""
    body = "\n\n".join(str(m.content).strip() for m in messages if str(m.content).strip())
    return f"{body}\n\n{prefix}" if prefix else body


def normalised(logprobs: Mapping[str, float]) -> dict[str, float]:
    """Probabilities over the options (a softmax of their log-probabilities)."""
    top = max(logprobs.values())
    weights = {k: math.exp(v - top) for k, v in logprobs.items()}
    total = sum(weights.values())
    return {k: w / total for k, w in weights.items()}


def choice_detail(method: str, logprobs: Mapping[str, float], bounded: Sequence[str] = ()) -> tuple[str, dict]:
    """(the most likely option, the detail recording the measurement)."""
    probs = normalised(logprobs)
    best = max(probs, key=probs.get)
    return best, {"method": method, "probabilities": rounded(probs), "logprobs": rounded(logprobs),
                  "bounded": list(bounded)}


def score_detail(method: str, logprobs: Mapping[str, float], bounded: Sequence[str] = ()) -> tuple[str, dict]:
    """(the expected score as text, the detail with the distribution over the scores)."""
    probs = normalised(logprobs)
    expected = sum(int(k) * p for k, p in probs.items())
    return f"{expected:.2f}", {"method": method, "probabilities": rounded(probs), "logprobs": rounded(logprobs),
                               "bounded": list(bounded), "expected": round(expected, 4)}


def rounded(values: Mapping[str, float], digits: int = 4) -> dict[str, float]:
    return {k: round(float(v), digits) for k, v in values.items()}
