"""S2MAD (Zhang et al., Alg. 1) as a protocol: stance separation, initial opinions, debate, judge — one claim.

Its modules, one concern each: the scenario (schema), the comments' scoring and stance separation
(stance), the claim's subjectivity (subjectivity), a role's reasoning turn and its label (turns),
the run of one claim with its debate rounds (debate), the judge (judge), the deciding role again
with another model (rescore), each role's document on a base model (document) and the report's
plots (report). S2MAD records no events of its own and is shown by the default unit view.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from moot.kit import ANY_STAGE, Expected, RunResults, expected
from moot.contract.protocol import InputField, Protocol
from moot.contract.report import ReportPart, Reporting
from moot.protocols.items.metrics import RUMOUR_METRICS, answers_of
from moot.protocols.s2mad.debate import run
from moot.protocols.s2mad.document import AGENT, JUDGE, N, P
from moot.protocols.s2mad.rescore import rescore
from moot.protocols.s2mad.schema import S2madScenario
from moot.speaker_selection.s2mad import next_speaker


def seats(s: S2madScenario) -> dict[str, tuple[str, ...]]:
    """The seats a person may take: each debater, both (`debaters`), the judge, the one agent
    (the scorer's and the classifier's answers are no turns)."""
    found: dict[str, tuple[str, ...]] = {r: (r,) for r in s.roles() if r not in ("scorer", "classifier")}
    if P in found and N in found:
        found["debaters"] = (P, N)
    return found


def report_part(runs: Sequence[RunResults], plots: Path) -> ReportPart:
    """Its plots in a report (moot.protocols.s2mad.report, imported only by a report)."""
    from moot.protocols.s2mad.report import part

    return part(runs, plots)


def scripted(s: S2madScenario) -> dict[str, Expected]:
    """A scripted debater's or judge's turn ends with "Answer: <label>"; the subjectivity question
    is answered Yes or No."""
    return {ANY_STAGE: expected("(scripted) I weighed the claim and its comments.\nAnswer: {label}", label=s.labels),
            "subjectivity": expected("{answer}", answer=("Yes", "No"))}


PROTOCOL = Protocol(
    name="s2mad",
    title="S2MAD rumor detection",
    paper="Zhang et al. 2025, Stance-aware and Subjectivity-aware Multi-Agent Debate for rumor detection",
    scenario=S2madScenario,
    policy=next_speaker,
    run=run,
    inputs=(InputField("claim", "text", help="the post whose veracity is judged"),
            InputField("comments", "comments", required=False, many=True, help="replies to the post")),
    result_name="veracity",
    deciders=(JUDGE, AGENT),
    rescore=rescore,
    example="s2mad",
    metrics=RUMOUR_METRICS,
    report=Reporting(part=report_part),
    rounds=answers_of,  # the debaters' answers per round (none without the debate)
    seats=seats,
    scripted=scripted,
)
