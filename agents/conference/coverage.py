"""Reference outcomes: which items of a real conference's outcome a simulated debate covered.

Heller et al. (§5.2.2) compare their simulated conferences, with and without the judge, with the
real drug-policy conference by reading them: the real experts agreed on criteria in seven
clusters, and the run without the judge "cover[s] six of the clusters, but the public cluster is
not addressed". moot automates that comparison (moot's extension; the paper's is manual): after a
topic with a reference outcome closes, the assessor is shown the reference items (name and
description) and the participants' turns on that topic — nothing else — and answers per item with
a quote from the debate and whether the debate covered it (structured output). With `choice:
likelihood` (moot.agents.conference.measures.assess) it is asked per item whether the debate
addressed it, yes or no read from its probabilities (the more likely answer), and for a yes to
copy the passage; that answer is then read and checked exactly like a written one.

The answer is not taken on trust: an item counts as covered only if its quote (two words at
least) occurs in one of the participants' turns (case, spacing, typographic quotes and dashes
ignored; a quote shortened with "..." must occur in order within one turn). A covered item without such a quote is
`unverified`; an item the reply does not answer readably is `unparsed`. Neither counts as covered.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional, Sequence

from pydantic import ValidationError

from moot.agents.conference.context import Said
from moot.kit import Measured, json_object
from moot.protocols.conference.events import Coverage, CoverageItem
from moot.protocols.conference.verdicts import ItemVerdict

_TYPOGRAPHY = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "–": "-", "—": "-"})
_ELLIPSIS = re.compile(r"\.{3,}|…")
_EDGE = " \t\n\"'.,;:!?-()[]*"
MIN_WORDS = 2  # a single word ("health", "the") shows nothing about what was argued
YES, NO = "yes", "no"  # the assessor's options per item, read by likelihood


def debate_of(history: Sequence[Said], topic: int) -> list[Said]:
    """The participants' turns on `topic`: what the assessor judges, and where quotes must occur."""
    return [s for s in history if s.topic == topic and s.action == "speak"]


def reference_text(items: Sequence[Any]) -> str:
    """`$reference` in the assessor's prompts: one line per item, `- name: description`."""
    return "\n".join(f"- {item_text(i)}" for i in items)


def item_text(item: Any) -> str:
    """`$item` in the assessor's per-item prompts: `name: description`."""
    return f"{item.name}: {item.description}" if item.description else item.name


def coverage_event(reply: str, items: Sequence[Any], debate: Sequence[Said], measured: Optional[Measured] = None,
                   **fields: Any) -> Coverage:
    """The coverage of one topic from the assessor's reply, every quote checked against `debate`;
    `measured`: how its answers were read from the model's probabilities, if they were (the
    probability of "yes" is kept per item). `fields`: turn, speaker, topic, model of the event."""
    data = json_object(reply)
    keys = _keys(data or {}, [i.name for i in items])
    results = [_item(i.name, data, keys.get(i.name), debate) for i in items]
    if measured is not None:
        fields["method"] = measured.method
        for r in results:
            r.probability = measured.distributions.get(r.name, {}).get(YES)
    covered = sum(r.status == "covered" for r in results)
    extra = sorted(set(data or {}) - set(keys.values()))
    error = "not JSON" if data is None else (f"answers for no reference item: {', '.join(extra)}" if extra else None)
    doubtful = any(r.status in ("unverified", "unparsed") for r in results)
    return Coverage(**fields, items=results, covered=covered, total=len(results),
                    fraction=round(covered / len(results), 4) if results else 0.0,
                    raw=reply if doubtful or error else None, error=error)


def _keys(data: Mapping[str, Any], names: Sequence[str]) -> dict[str, str]:
    """The reply's key for each item: its name exactly, else the one key equal to it ignoring case."""
    found = {}
    for name in names:
        if name in data:
            found[name] = name
            continue
        same = [k for k in data if isinstance(k, str) and k.strip().lower() == name.lower()]
        if len(same) == 1:
            found[name] = same[0]
    return found


def _item(name: str, data: Optional[Mapping[str, Any]], key: Optional[str], debate: Sequence[Said]) -> CoverageItem:
    if data is None:
        return CoverageItem(name=name, status="unparsed", error="not JSON")
    if key is None:
        return CoverageItem(name=name, status="unparsed", error="no answer for this item")
    try:
        answer = ItemVerdict.model_validate(data[key])
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(map(str, first["loc"])) or "answer"
        return CoverageItem(name=name, status="unparsed", error=f"{where}: {first['msg']}")
    if not answer.covered:
        return CoverageItem(name=name, status="not_covered", evidence=answer.evidence)
    if not answer.evidence.strip(_EDGE):
        return CoverageItem(name=name, status="unverified", error="said covered, without a quote")
    if len(_normal(_ELLIPSIS.sub(" ", answer.evidence)).strip(_EDGE).split()) < MIN_WORDS:
        return CoverageItem(name=name, status="unverified", evidence=answer.evidence,
                            error=f"a quote of fewer than {MIN_WORDS} words is no evidence")
    turn = find_quote(answer.evidence, debate)
    if turn is None:
        return CoverageItem(name=name, status="unverified", evidence=answer.evidence,
                            error="the quote is not in the participants' turns")
    return CoverageItem(name=name, status="covered", evidence=answer.evidence, turn=turn)


def find_quote(quote: str, debate: Sequence[Said]) -> Optional[int]:
    """The turn of the first participant turn that holds `quote` (see the module docstring)."""
    fragments = [f.strip(_EDGE) for f in _ELLIPSIS.split(_normal(quote))]
    fragments = [f for f in fragments if f]
    if not fragments:
        return None
    for said in debate:
        text, at = _normal(said.text), 0
        for fragment in fragments:
            at = text.find(fragment, at)
            if at < 0:
                break
            at += len(fragment)
        else:
            return said.turn
    return None


def _normal(text: str) -> str:
    return " ".join(text.translate(_TYPOGRAPHY).lower().split())
