"""The conference's own events, registered in the log with the protocol (moot.log.registry).

With each turn they concern: the judge's (or deciding moderator's) `verdict`, the evaluator's
`score` (or a grader's grade of a judge decision, added by `moot score`), the assessor's
`coverage` of a topic's reference outcome, and `topic_closed`. Their names and fields are those
of the transcripts moot wrote before they moved here (version 1 of each), so every transcript
and every script written for them keep working.
"""

from __future__ import annotations

from typing import Literal, Optional, TypedDict

from pydantic import BaseModel, ConfigDict

from moot.kit import EventBase, EventType


class Verdict(EventBase):
    type: Literal["verdict"] = "verdict"
    turn: int
    speaker: str
    topic: Optional[int]
    round: int
    verdict: Literal["AGREEMENT", "MORE_DEBATE", "NEXT_TOPIC", "UNPARSED"]
    reason: str = ""
    raw: Optional[str] = None
    error: Optional[str] = None
    method: str = ""  # how it was read: likelihood | top_logprobs | scripted (measured), structured, text
    probabilities: dict[str, float] = {}  # measured: each option's probability
    threshold: Optional[float] = None  # measured: the probability the closing option needed


class Where(TypedDict):
    """The turn an evaluator's, grader's or assessor's event is about, and who made it with which
    model (the keyword arguments of Score and Coverage that say where)."""

    turn: int
    speaker: str
    topic: Optional[int]
    model: str


class ScoreHow(TypedDict, total=False):
    """How a Score's numbers were read from the model's probabilities (nothing: written)."""

    method: str
    distributions: dict[str, dict[str, float]]


class VerdictHow(TypedDict, total=False):
    """How a Verdict was read from the model's probabilities (nothing: written)."""

    method: str
    probabilities: dict[str, float]
    threshold: Optional[float]


class GradeFields(Where, ScoreHow):
    """A grader's Score: where, how it was read, and that it grades a judge decision."""

    kind: Literal["debate", "judge_decision"]


class VerdictFields(VerdictHow):
    turn: int
    speaker: str
    topic: Optional[int]
    round: int


class Score(EventBase):
    """An evaluator's scores of a topic's debate, or a grader's grade of a judge decision. Scores
    are floats: an expected score read from the model's probabilities is not an integer
    (transcripts written before hold integers; they load unchanged in value)."""

    type: Literal["score"] = "score"
    turn: int
    speaker: str
    topic: Optional[int]
    model: str
    kind: Literal["debate", "judge_decision"] = "debate"
    scores: dict[str, float] = {}  # 1-10: an integer the model wrote, or (measured) an expected score
    overall: Optional[float] = None
    rationale: str = ""
    parsed: bool = True
    raw: Optional[str] = None
    error: Optional[str] = None
    method: str = ""  # how the scores were read: likelihood | top_logprobs | scripted (measured), structured
    distributions: dict[str, dict[str, float]] = {}  # measured: per criterion (and overall), each score's probability
    suspect: str = ""  # written scores that are "constant" or "monotone" over the criteria in order: kept, flagged


class TopicClosed(EventBase):
    type: Literal["topic_closed"] = "topic_closed"
    topic: int
    rounds: int
    closed_by: Literal["agreement", "round_cap", "moderator"]


class CoverageItem(BaseModel):
    """One reference item, as the assessor judged it: `covered` (and its quote was found in the
    debate: `turn` is where), `not_covered`, `unverified` (said covered, but the quote is empty or
    not in the debate: not counted as covered), or `unparsed` (no readable answer for it)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    status: Literal["covered", "not_covered", "unverified", "unparsed"]
    evidence: str = ""
    turn: Optional[int] = None
    error: Optional[str] = None
    probability: Optional[float] = None  # read from the model's probabilities: p(the debate addressed it)


class Coverage(EventBase):
    """How much of a topic's reference outcome its debate covered, judged by the assessor after the
    topic closed (a conference's automated form of Heller et al.'s §5.2.2 comparison)."""

    type: Literal["coverage"] = "coverage"
    turn: int
    speaker: str
    topic: int
    model: str = ""
    items: list[CoverageItem]
    covered: int
    total: int
    fraction: float
    raw: Optional[str] = None  # the assessor's reply, kept when any item is unparsed or unverified
    error: Optional[str] = None
    method: Optional[str] = None  # how the answers were read (likelihood, top_logprobs, scripted, or a
    # structured fallback); None: written (structured output), as in transcripts before it was recorded


EVENT_TYPES = tuple(EventType(model) for model in (Verdict, Score, TopicClosed, Coverage))
