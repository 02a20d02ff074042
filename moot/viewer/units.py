"""One run's units as rows of a table: what its results say at once, what its transcripts say
once they are indexed, the filters over both, and pages of rows.

A run folder opens without reading its transcripts (moot.saved.source): a row's prediction, gold
label, correctness and status come from results.jsonl, so the first page of a 10,000-unit run is
quick. Facts that only a transcript holds (the item's target, how many rounds it took, whether the
answer flipped, whether the deciders disagreed at the end) are read by a background indexer with
the strict transcript loader; filters on them cover the units indexed so far and say so. A
transcript that does not load is a row with its error (file and line); the others are unaffected.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

from moot.contract.metrics import CORRECT, UNPARSED_MEASURE, Measure, UnitRecord
from moot.contract.registry import AnyProtocol
from moot.saved.records import ResultRow
from moot.saved.source import RunSource, UnitRef, open_run
from moot.log.events import Message, Outcome
from moot.log.transcript import Transcript, load
from moot.metrics.classification import UNPARSED, MetricReport, summarize
from moot.viewer.catalog import contract_of, stamps
from moot.viewer.deferred import Worker

PAGE = 100
FILTERS = {  # name -> what the filter keeps
    "all": "every unit",
    "wrong": "scored units predicted wrong",
    "right": "scored units predicted right",
    "flipped": "units whose final answer differs from their first round's majority",
    "disagree": "units whose deciders disagreed in their last round",
    "unparsed": "units whose reply mapped onto no label",
    "failed": "units that failed or did not finish",
}
NEEDS_INDEX = ("flipped", "disagree")
ITEM_FILTERS = ("wrong", "right", "unparsed")  # on a prediction and a gold label


@dataclass(frozen=True)
class Facts:
    """What a unit's transcript says beyond its results row."""

    target: str = ""
    rounds: int = 0
    flipped: bool = False
    disagree: bool = False
    messages: int = 0
    tokens: int = 0
    status: str = ""  # how its last invocation ended (run_finished), "" if it did not
    error: str = ""  # the loader's one line, when the transcript does not load


@dataclass(frozen=True)
class Row:
    """One unit in the run's table."""

    key: str  # its transcript's file name without .jsonl (what URLs name it by)
    id: str
    prediction: Optional[str]
    gold: Optional[str]
    status: str  # completed | failed | interrupted | unfinished
    measures: tuple[Optional[float], ...] = ()
    facts: Optional[Facts] = None

    @property
    def correct(self) -> Optional[bool]:
        return None if self.gold is None or self.prediction is None else self.prediction == self.gold

    @property
    def finished(self) -> bool:
        return self.status == "completed"


def unit_key(unit: UnitRef) -> str:
    return unit.path.name.removesuffix(".jsonl")


def facts_of(transcript: Transcript) -> Facts:
    """Rounds, flips and disagreement from the messages' decisions (see FILTERS), and totals."""
    messages = transcript.messages
    by_part: dict[Optional[int], set[int]] = {}
    for m in messages:
        by_part.setdefault(m.part, set()).add(m.round)
    rounds = max((len(r) for r in by_part.values()), default=0)
    decided: dict[int, list[str]] = {}
    for m in messages:
        if m.decision:
            decided.setdefault(m.round, []).append(m.decision)
    outcome = transcript.outcome
    flipped = disagree = False
    if decided:
        first, last = decided[min(decided)], decided[max(decided)]
        disagree = len(set(last)) > 1
        majority = Counter(first).most_common(1)[0][0]
        flipped = len(decided) > 1 and outcome is not None and outcome.prediction != majority
    done = transcript.finished
    target = transcript.started.inputs.get("target")
    return Facts(str(target) if isinstance(target, str) else "", rounds, flipped, disagree, len(messages),
                 sum(m.usage.prompt_tokens + m.usage.completion_tokens for m in messages),
                 done.status if done else "")


def read_facts(path: Path) -> Facts:
    try:
        return facts_of(load(path))
    except (ValueError, OSError) as exc:
        return Facts(error=str(exc), status="unreadable")


class Indexer:
    """Reads transcripts for their Facts in one background thread, each once per file stamp."""

    def __init__(self) -> None:
        self._facts: dict[Path, tuple[tuple[Any, ...], Facts]] = {}
        self._queued: set[Path] = set()
        self._lock = threading.Lock()
        self._worker = Worker("moot-view-index")

    def get(self, path: Path) -> Optional[Facts]:
        with self._lock:
            found = self._facts.get(path)
        return found[1] if found is not None and found[0] == stamps(path, False) else None

    def now(self, path: Path) -> Facts:
        """A unit's facts, read now if they are not known (one unit)."""
        found = self.get(path)
        if found is None:
            found = read_facts(path)
            with self._lock:
                self._facts[path] = (stamps(path, False), found)
        return found

    def want(self, paths: Iterable[Path]) -> None:
        """Index these in the background (those not indexed or queued yet)."""
        todo = [p for p in paths if p not in self._queued and self.get(p) is None]
        if todo:
            with self._lock:
                self._queued.update(todo)
            self._worker.submit(self._index, todo)

    def _index(self, paths: list[Path]) -> None:
        for path in paths:
            if self._worker.stopped.is_set():
                return
            stamp = stamps(path, False)
            found = read_facts(path)
            with self._lock:
                self._facts[path] = (stamp, found)
                self._queued.discard(path)

    def close(self) -> None:
        self._worker.close()


@dataclass
class RunTable:
    """A run folder (or transcript file) opened for its page (see the module docstring)."""

    source: RunSource
    contract: Optional[AnyProtocol]
    rows: list[Row]
    refs: dict[str, UnitRef]
    labels: list[str]
    metric: str
    measures: tuple[Measure, ...] = field(default=())

    @property
    def protocol(self) -> str:
        return self.source.record.protocol_name or (self.contract.name if self.contract else "?")

    @property
    def result_name(self) -> str:
        return self.contract.result_name if self.contract else "prediction"

    @property
    def scored(self) -> list[Row]:
        return [r for r in self.rows if r.gold is not None and r.finished]

    def report(self) -> Optional[MetricReport]:
        scored = self.scored
        if not scored or not self.labels:
            return None
        try:
            return summarize([str(r.gold) for r in scored], [str(r.prediction) for r in scored], self.labels)
        except ValueError:  # gold labels outside the run's labels: no report (the headline says why)
            return None

    @property
    def items(self) -> bool:
        """Its units are items (a prediction, a gold label, right or wrong); a protocol whose units
        are runs of its scenario (a conference, with topics) has none of these."""
        return self.contract.units.items if self.contract else True

    @property
    def has_target(self) -> bool:
        """Its items name a target (a stance's); an unknown protocol's might."""
        return self.contract is None or "target" in self.contract.input_names()

    @property
    def filters(self) -> dict[str, str]:
        """The filters that mean something for its units (right, wrong and unparsed need items)."""
        return FILTERS if self.items else {k: v for k, v in FILTERS.items() if k not in ITEM_FILTERS}

    def golds(self) -> list[str]:
        return sorted({r.gold for r in self.rows if r.gold is not None})


def row_measures(contract: Optional[AnyProtocol]) -> tuple[Measure, ...]:
    """The protocol's measures a row shows: those read from results rows, but correctness and
    unparsed (the table has columns of its own for them)."""
    if contract is None:
        return ()
    return tuple(m for m in contract.metrics.measures
                 if not m.reads_transcript and m is not CORRECT and m is not UNPARSED_MEASURE)


def open_table(path: Path, indexer: Indexer) -> RunTable:
    source = open_run(path)
    first = source.units[0] if source.units else None
    protocol = source.record.protocol_name or ""
    if not protocol and first is not None:
        protocol = indexer_protocol(first)
    contract = contract_of(protocol)
    measures = row_measures(contract)
    labels = list(source.record.labels or [])
    rows = []
    refs = {}
    for unit in source.units:
        row = unit.result if source.is_folder else None
        key = unit_key(unit)
        refs[key] = unit
        if row is None and not source.is_folder:
            row = file_row(unit, indexer)
        rows.append(table_row(key, unit, row, labels, measures))
    metric = source.record.headline or "macro_f1"
    return RunTable(source, contract, rows, refs, labels, metric, measures)


def indexer_protocol(unit: UnitRef) -> str:
    from moot.viewer.catalog import first_event

    return str(first_event(unit.path).get("protocol") or "")


def file_row(unit: UnitRef, indexer: Indexer) -> Optional[ResultRow]:
    """A transcript file's one unit as a results row (its outcome), read now."""
    try:
        transcript = load(unit.path)
    except (ValueError, OSError):
        return None
    found = transcript.outcome
    if not transcript.completed:
        return None
    return ResultRow(id=unit.id, status="completed", prediction=found.prediction if found else None,
                     gold=found.gold if found else transcript.started.gold)


def table_row(key: str, unit: UnitRef, row: Optional[ResultRow], labels: Sequence[str],
              measures: Sequence[Measure]) -> Row:
    if row is None:
        return Row(key, unit.id, None, None, "unfinished")
    record = UnitRecord(row, labels)
    return Row(key, unit.id, row.prediction, row.gold, row.state, tuple(m.of(record) for m in measures))


# ---------------------------------------------------------------------------------------------- filters
@dataclass(frozen=True)
class Query:
    """What the run page shows: a filter, a gold label, a target, an id search, a page."""

    show: str = "all"
    gold: str = ""
    target: str = ""
    q: str = ""
    page: int = 1

    def changed(self, **kwargs: Any) -> "Query":
        values = {"show": self.show, "gold": self.gold, "target": self.target, "q": self.q, "page": 1, **kwargs}
        return Query(**values)

    @property
    def needs_index(self) -> bool:
        return self.show in NEEDS_INDEX or bool(self.target)


def keep(show: str, row: Row, labels: Sequence[str]) -> bool:
    facts = row.facts
    tests: dict[str, Callable[[], bool]] = {
        "all": lambda: True,
        "wrong": lambda: row.correct is False,
        "right": lambda: row.correct is True,
        "unparsed": lambda: row.finished and row.prediction is not None and (
            row.prediction == UNPARSED or bool(labels) and row.prediction not in labels),
        "failed": lambda: not row.finished,
        "flipped": lambda: facts is not None and facts.flipped,
        "disagree": lambda: facts is not None and facts.disagree,
    }
    return tests.get(show, tests["all"])()


@dataclass(frozen=True)
class Page:
    rows: list[Row]
    matched: int
    pages: int
    indexed: int  # transcripts indexed so far (of the run's units)
    complete: bool  # every transcript the query needs is indexed


def select(table: RunTable, query: Query, indexer: Indexer) -> Page:
    """The rows `query` keeps, one page of them with their facts (read now for that page)."""
    if query.needs_index:
        indexer.want(table.refs[r.key].path for r in table.rows)
    rows = table.rows
    if query.needs_index:
        rows = [with_facts(r, indexer.get(table.refs[r.key].path)) for r in rows]
    indexed = sum(1 for r in rows if r.facts is not None) if query.needs_index else 0
    found = [r for r in rows if keep(query.show, r, table.labels)
             and (not query.gold or r.gold == query.gold)
             and (not query.target or (r.facts is not None and r.facts.target == query.target))
             and (not query.q or query.q.lower() in r.id.lower())]
    pages = max(1, -(-len(found) // PAGE))
    page = min(max(query.page, 1), pages)
    shown = [with_facts(r, indexer.now(table.refs[r.key].path)) for r in found[(page - 1) * PAGE: page * PAGE]]
    complete = not query.needs_index or indexed == len(table.rows)
    return Page(shown, len(found), pages, indexed, complete)


def with_facts(row: Row, facts: Optional[Facts]) -> Row:
    return Row(row.key, row.id, row.prediction, row.gold, row.status, row.measures, facts)


def targets(table: RunTable, indexer: Indexer) -> list[str]:
    """The targets of the units indexed so far."""
    found = {f.target for f in (indexer.get(u.path) for u in table.refs.values()) if f is not None and f.target}
    return sorted(found)


def outcome_of(transcript: Transcript) -> Optional[Outcome]:
    return transcript.outcome


def decisions_changed(messages: Sequence[Message]) -> dict[int, str]:
    """Turns whose decision differs from the same speaker's previous one in the same part:
    turn -> the decision before it."""
    last: dict[tuple[str, Optional[int]], str] = {}
    changed = {}
    for m in messages:
        if not m.decision:
            continue
        before = last.get((m.speaker, m.part))
        if before is not None and before != m.decision:
            changed[m.turn] = before
        last[(m.speaker, m.part)] = m.decision
    return changed
