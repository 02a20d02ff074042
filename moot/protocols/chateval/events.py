"""A referee's scores as recorded (the `judgement` event), read from its reply and summed to a preference."""

from __future__ import annotations

import re
from typing import Callable, Literal, Mapping, Optional, Sequence

from moot.contract.protocol import Outcome
from moot.kit import EventBase, UNPARSED
from moot.protocols.chateval.schema import HI, LO, Order


class Judgement(EventBase):
    """A referee's scores in the last turn, by answer (`a`, `b`), with the turn that gave them."""

    type: Literal["judgement"] = "judgement"
    turn: int
    speaker: str
    role: str
    order: Order
    scores: dict[str, float] = {}  # by answer: {"a": 8, "b": 7}; task scores: {"a": 7}
    preference: Optional[str] = None  # pairwise: a | b | tie by its own scores; None: unparsed, or task scores
    parsed: bool = True
    raw: Optional[str] = None  # the reply, kept when unparsed
    error: Optional[str] = None
    method: str = "text"  # text | likelihood | top_logprobs | scripted (measured) | structured
    distributions: dict[str, dict[str, float]] = {}  # measured: per answer, each score's probability


def assistants(order: str) -> list[tuple[str, str]]:
    """(answer, what the prompt calls it) in the order shown."""
    if order == "panel":
        return [("a", "the assistant")]
    first, second = ("a", "b") if order == "ab" else ("b", "a")
    return [(first, "Assistant 1"), (second, "Assistant 2")]


def preference(scores: Mapping[str, float]) -> str:
    return "a" if scores["a"] > scores["b"] else "b" if scores["b"] > scores["a"] else "tie"


def read_scores(text: str, order: str) -> tuple[dict[str, float], Optional[str]]:
    """The scores the reply's last lines give (`The score of Assistant 1: 8`, then `... 2: 7`; the
    code's format), by answer; ({}, why) when they cannot be read. Markdown emphasis and `/10` or
    `out of 10` after the number are allowed; a score outside 1..10 is not."""
    shown = assistants(order)
    lines = [line for line in text.splitlines() if line.strip()][-len(shown):]
    wanted = " and ".join(f"'The score of {name}: N'" for _, name in shown)
    if len(lines) < len(shown):
        return {}, f"the reply does not end with {wanted}"
    scores = {}
    for line, (answer, name) in zip(lines, shown):
        found = re.fullmatch(rf"[*_\s]*The score of {name}[*_\s]*:[*_\s]*(\d+(?:\.\d+)?)\s*(?:/\s*{HI}|out of {HI})?"
                             r"[*_.\s]*", line, re.I)
        if found is None:
            return {}, f"the reply does not end with {wanted}"
        value = float(found.group(1))
        if not LO <= value <= HI:
            return {}, f"the score of {name} is {found.group(1)}, outside {LO}-{HI}"
        scores[answer] = value
    return scores, None


def decide(order: str) -> Callable[[str], str]:
    """A referee's last reply as its message's decision: its preference, or `unparsed`."""
    def reading(text: str) -> str:
        scores, _ = read_scores(text, order)
        return (preference(scores) if order != "panel" else f"{scores['a']:g}") if scores else UNPARSED
    return reading


def summed(judgements: Sequence[Judgement]) -> dict[str, float]:
    return {answer: sum(j.scores[answer] for j in judgements) for answer in ("a", "b")}


def aggregate(judgements: Sequence[Judgement], task: str) -> Outcome:
    """The item's result from every referee's judgement in every order (the module docstring)."""
    unread = [j for j in judgements if not j.parsed]
    if unread:
        who = ", ".join(f"{j.speaker} ({j.order})" for j in unread)
        return Outcome(UNPARSED if task == "pairwise" else None,
                       f"{len(unread)} of {len(judgements)} judgements unreadable: {who}",
                       decided_by="unparsed", summary={"unread": len(unread)})
    if task == "scores":
        mean = sum(j.scores["a"] for j in judgements) / len(judgements)
        return Outcome(None, f"mean of {len(judgements)} referees' scores: {mean:.2f}", decided_by="mean",
                       summary={"score": round(mean, 4), "unread": 0})
    sums = summed(judgements)
    label = preference(sums)
    orders = {order: preference(summed([j for j in judgements if j.order == order]))
              for order in dict.fromkeys(j.order for j in judgements)}
    referees = len({j.role for j in judgements})
    explanation = (f"sums over {referees} referee(s) x {len(orders)} order(s): a {sums['a']:g}, b {sums['b']:g}"
                   + (" (equal: tie)" if label == "tie" else ""))
    return Outcome(label, explanation, decided_by="sum_of_scores",
                   summary={"sums": sums, "orders": orders, "unread": 0})
