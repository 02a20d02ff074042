"""Conference runs in a report: per topic, over the conferences of a run (one conference, or a
batch such as `moot run drug_policy --vary seed=1,2,3`), how the topic closed and after how many
rounds, the judge's verdicts, the evaluator's scores as mean ± sd, and the share of the topic's
reference outcome the debate covered — read from the transcripts only, no model called. Reference
coverage is also shown per item with the runs side by side (e.g. drug_policy beside
drug_policy_no_judge: Heller et al.'s §5.2.2 comparison, measured).

Conferences that differ only by seed are pooled; other variants (models, persona sets) are groups
of their own. In a rescored folder (`moot score`) the rescoring counts: per conference and topic
the last debate score recorded, and the grader's grades of the judge's decisions (Table 5).
The sd is the sample standard deviation (n - 1); with one conference it is not shown.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from moot.contract.report import CsvFile, ReportPart
from moot.protocols.conference.events import Coverage, Score, TopicClosed, Verdict
from moot.protocols.conference.views import topics_of
from moot.kit import RunSource, Transcript, cell, models_text, run_dates, table as markdown_table
from moot.protocols.conference.metrics import AGREED
from moot.protocols.conference.verdicts import CRITERIA

CLOSINGS = ("agreement", "moderator", "round_cap")
VERDICTS = ("AGREEMENT", "MORE_DEBATE", "NEXT_TOPIC", "UNPARSED")


@dataclass
class TopicStats:
    """One topic over a group's conferences."""

    number: int
    name: str
    closed: Counter[str] = field(default_factory=Counter)
    rounds: list[int] = field(default_factory=list)  # rounds to agreement, per conference that agreed
    verdicts: Counter[str] = field(default_factory=Counter)
    overall: list[float] = field(default_factory=list)
    criteria: dict[str, list[float]] = field(default_factory=dict)
    grades: list[float] = field(default_factory=list)
    coverage: list[float] = field(default_factory=list)  # covered fraction, per conference assessed
    items: dict[str, Counter[str]] = field(default_factory=dict)  # reference item -> statuses over conferences


@dataclass
class Group:
    """Conferences of one run that differ at most by seed."""

    ref: str
    name: str
    transcripts: list[Transcript]
    topics: list[TopicStats]
    seeds: list[str]


@dataclass
class ConferenceRun:
    source: RunSource
    ref: str
    groups: list[Group]
    unfinished: int

    @property
    def model(self) -> str:
        return models_text(self.source.record.models or (self.groups[0].transcripts[0].started.models
                                                          if self.groups else {}))

    @property
    def date(self) -> str:
        return run_dates(self.source)


def mean_sd(values: Sequence[float]) -> str:
    if not values:
        return "—"
    mean = statistics.fmean(values)
    if len(values) < 2:
        return f"{mean:.2f} (n=1)"
    return f"{mean:.2f} ± {statistics.stdev(values):.2f} (n={len(values)})"


def topic_stats(transcripts: Sequence[Transcript]) -> list[TopicStats]:
    topics = topics_of(transcripts[0].started.scenario)
    stats = [TopicStats(n, name) for n, name in enumerate(topics)]
    for t in transcripts:
        closed = {e.topic: e for e in t.of_type(TopicClosed)}
        debate = {s.topic: s for s in t.of_type(Score) if s.kind == "debate"}  # the last one counts
        for topic in stats:
            ended = closed.get(topic.number)
            topic.closed[ended.closed_by if ended else "open"] += 1
            if ended and ended.closed_by in AGREED:
                topic.rounds.append(ended.rounds)
            topic.verdicts.update(v.verdict for v in t.of_type(Verdict) if v.topic == topic.number)
            score = debate.get(topic.number)
            if score is not None and score.parsed and score.overall is not None:
                topic.overall.append(score.overall)
                for criterion, value in score.scores.items():
                    topic.criteria.setdefault(criterion, []).append(value)
            topic.grades += [s.overall for s in t.of_type(Score)
                             if s.kind == "judge_decision" and s.topic == topic.number and s.parsed
                             and s.overall is not None]
            assessed = [c for c in t.of_type(Coverage) if c.topic == topic.number]
            if assessed:  # the last one counts
                topic.coverage.append(assessed[-1].fraction)
                for item in assessed[-1].items:
                    topic.items.setdefault(item.name, Counter())[item.status] += 1
    return stats


def group_key(t: Transcript) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(t.started.variant.items()) if k != "seed")


def load_conference_run(source: RunSource, ref: str) -> ConferenceRun:
    transcripts = [u.load() for u in source.units]
    done = sorted((t for t in transcripts if t.completed), key=lambda t: t.started.unit)
    groups: dict[str, list[Transcript]] = {}
    for t in done:
        groups.setdefault(group_key(t), []).append(t)
    made = [Group(ref, key, ts, topic_stats(ts), [str(t.started.variant["seed"]) for t in ts
                                                   if "seed" in t.started.variant])
            for key, ts in sorted(groups.items())]
    return ConferenceRun(source, ref, made, len(transcripts) - len(done))


def title(group: Group) -> str:
    t = group.transcripts[0]
    what = f" · {group.name}" if group.name else ""
    seeds = f", seeds {', '.join(group.seeds)}" if group.seeds else ""
    return f"{group.ref}: {t.started.scenario.get('title', '?')}{what} ({len(group.transcripts)} conference(s){seeds})"


def topic_rows(group: Group) -> list[list[str]]:
    rows = []
    graded, assessed = (any(getattr(t, k) for t in group.topics) for k in ("grades", "coverage"))
    for topic in group.topics:
        closed = ", ".join(f"{k} {topic.closed[k]}" for k in (*CLOSINGS, "open") if topic.closed[k])
        verdicts = ", ".join(f"{v} {topic.verdicts[v]}" for v in VERDICTS if topic.verdicts[v]) or "—"
        rows.append([f"{topic.number + 1}. {topic.name}", closed, mean_sd(topic.rounds), verdicts,
                     mean_sd(topic.overall)] + ([mean_sd(topic.grades)] if graded else [])
                    + ([mean_sd(topic.coverage)] if assessed else []))
    return rows


def topic_head(group: Group) -> list[str]:
    head = ["topic", "closed by", "rounds to agreement", "judge verdicts", "evaluator overall"]
    head += ["judge decision grade (Table 5)"] if any(t.grades for t in group.topics) else []
    return head + (["reference covered"] if any(t.coverage for t in group.topics) else [])


def criteria_rows(group: Group) -> list[list[str]]:
    return [[criterion] + [mean_sd(t.criteria.get(criterion, [])) for t in group.topics] for criterion in CRITERIA]


def table(head: list[str], rows: list[list[str]]) -> str:
    return "\n".join(markdown_table(head, rows))


def markdown(run: ConferenceRun, criteria: bool = True) -> str:
    """Per group, the topic table (and, with `criteria`, the evaluator's scores per criterion)."""
    parts = []
    for group in run.groups:
        parts.append(f"### {cell(title(group))}\n\n{table(topic_head(group), topic_rows(group))}")
        if criteria and any(t.criteria for t in group.topics):
            head = ["criterion"] + [f"topic {t.number + 1}" for t in group.topics]
            parts.append(f"Evaluator scores per criterion (mean ± sd):\n\n{table(head, criteria_rows(group))}")
    if run.unfinished:
        parts.append(f"{run.ref}: {run.unfinished} conference(s) did not complete and are left out.")
    return "\n\n".join(parts) if parts else f"{run.ref}: no completed conference."


def column_name(run: ConferenceRun, group: Group) -> str:
    """A coverage column: run, scenario file and variant (`R2 drug_policy_no_judge`)."""
    path = run.source.record.scenario_path or group.transcripts[0].started.scenario_path
    return " · ".join(filter(None, [f"{run.ref} {Path(path).stem}", group.name]))


def item_cell(statuses: Counter[str], conferences: int) -> str:
    """`covered/conferences`, then any unverified or unparsed answers: `0/2 (1 unverified)`."""
    doubtful = ", ".join(f"{statuses[k]} {k}" for k in ("unverified", "unparsed") if statuses[k])
    return f"{statuses['covered']}/{conferences}" + (f" ({doubtful})" if doubtful else "")


def coverage_markdown(runs: Sequence[ConferenceRun]) -> str:
    """Per topic with a reference outcome: each reference item's coverage, the runs side by side
    (cells: conferences whose debate covered it / conferences assessed), then the covered fraction."""
    columns = [(column_name(run, g), g) for run in runs for g in run.groups]
    parts = []
    for number in sorted({t.number for _, g in columns for t in g.topics if t.coverage}):
        stats = [next((t for t in g.topics if t.number == number), None) for _, g in columns]
        names = list(dict.fromkeys(n for t in stats if t for n in t.items))
        rows = [[name] + [item_cell(t.items.get(name, Counter()), len(t.coverage)) if t and t.coverage else "—"
                          for t in stats] for name in names]
        rows.append(["covered fraction"] + [mean_sd(t.coverage) if t else "—" for t in stats])
        topic = next(t for t in stats if t and t.coverage)
        parts.append(f"### Reference coverage, topic {number + 1}: {cell(topic.name)}\n\n"
                     f"{table(['reference item'] + [name for name, _ in columns], rows)}")
    return "\n\n".join(parts)


def coverage_csv_rows(runs: Sequence[ConferenceRun]) -> list[list[object]]:
    """coverage.csv: run, variant, topic, item, then conferences covered / unverified / unparsed / assessed."""
    return [[run.ref, g.name or "-", t.number + 1, name, statuses["covered"], statuses["unverified"],
             statuses["unparsed"], len(t.coverage)]
            for run in runs for g in run.groups for t in g.topics for name, statuses in t.items.items()]


COVERAGE_CSV_HEAD = ["run", "variant", "topic", "item", "covered", "unverified", "unparsed", "conferences"]


def csv_rows(run: ConferenceRun) -> list[list[object]]:
    """conference.csv, numbers only: per run, group and topic the conferences closed each way, the
    judge's verdicts by kind, then mean, sd and n of each measure (empty where there is none)."""
    out: list[list[object]] = []
    for group in run.groups:
        for topic in group.topics:
            out.append([run.ref, group.name or "-", topic.number + 1, topic.name,
                        *(topic.closed[k] for k in (*CLOSINGS, "open")), *(topic.verdicts[v] for v in VERDICTS),
                        *(cell for values in (topic.rounds, topic.overall, topic.grades, topic.coverage)
                          for cell in summary(values))])
    return out


def summary(values: Sequence[float]) -> tuple[object, object, int]:
    """Mean, sample sd (none below two values) and n, as CSV cells (empty: none)."""
    if not values:
        return "", "", 0
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else "", len(values)


MEASURES = ("rounds_to_agreement", "evaluator_overall", "judge_grade", "reference_covered")
CSV_HEAD = ["run", "variant", "topic", "name", *(f"closed_by_{k}" for k in (*CLOSINGS, "open")),
            *(f"verdicts_{v}" for v in VERDICTS), *(f"{m}_{part}" for m in MEASURES for part in ("mean", "sd", "n"))]


def provenance(runs: Sequence[ConferenceRun]) -> str:
    head = ["run", "folder", "scenario file", "scenario sha256", "model spec(s)", "conferences (completed/all)",
            "rescored", "date (UTC)"]
    rows = []
    for run in runs:
        m = run.source.record
        done = sum(len(g.transcripts) for g in run.groups)
        first = run.groups[0].transcripts[0].started if run.groups else None
        rows.append([run.ref, str(run.source.path), m.scenario_path or (first.scenario_path if first else "?"),
                     m.scenario_sha256 or (first.scenario_sha256 if first else "?"),
                     run.model, f"{done}/{done + run.unfinished}",
                     ", ".join(f"{k}={v}" for k, v in (m.rescored.roles or {}).items()) if m.rescored else "—",
                     run.date])
    return table(head, rows)


NOTE = (
    "Per topic, over the completed conferences of a run (conferences that differ only by seed pooled): "
    "how the topic closed (the judge's AGREEMENT, the deciding moderator's NEXT_TOPIC, or the round cap), "
    "the rounds it took to agree, the judge's verdicts, the evaluator's overall score (in a rescored "
    "folder: the rescoring's), and the fraction of the topic's reference outcome the debate covered, as "
    "mean ± sample standard deviation (n = conferences). Reference coverage per item: conferences whose "
    "debate covered the item (the assessor's quote found in a participant's turn) / conferences assessed; "
    "unverified (said covered, quote not found) and unparsed answers are not counted as covered.")


def part(conferences: Sequence[ConferenceRun], plots: Sequence[Path]) -> ReportPart:
    """The conferences' part of a report: per topic over each run's conferences, reference
    coverage side by side, provenance; conference.csv and coverage.csv; `plots`, drawn of them
    (moot.protocols.conference.plots)."""
    coverage = coverage_markdown(conferences)
    text = "\n\n".join(filter(None, [*(markdown(c) for c in conferences), coverage]))
    main = "\n\n".join(filter(None, [*(markdown(c, criteria=False) for c in conferences), coverage]))
    files = [CsvFile("conference.csv", tuple(CSV_HEAD), tuple(tuple(r) for c in conferences for r in csv_rows(c)))]
    if coverage:
        files.append(CsvFile("coverage.csv", tuple(COVERAGE_CSV_HEAD),
                             tuple(tuple(r) for r in coverage_csv_rows(conferences))))
    sections = ("## Conferences: per topic over each run's conferences", "", NOTE, "", text, "",
                "## Conference runs (provenance)", "", provenance(conferences), "")
    lines = tuple(f"{c.ref}: {c.source.path} (conferences; model {c.model})" for c in conferences)
    return ReportPart(main, sections, tuple(files), tuple(plots), lines)
