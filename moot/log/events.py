"""The event log's vocabulary: one typed event per line, the same envelope for every protocol.

A run of one unit (a conference, or one item of a dataset) is `run_started`, then its events, then
`run_finished`; a continued run adds `run_resumed`. Every model call is a `call` event (the exact
messages sent, the reply, usage, latency, attempts, whether it came from the cache); what a role
contributes is a `message` (a conference turn, or an item's analysis, argument or decision);
`verdict`, `score`, `topic_closed` and `coverage` belong to conferences and `outcome` to items.
The conference keeps the event names of schema version 1, so scripts written for it keep working.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

SCHEMA_VERSION = 2
MEASURED = ("likelihood", "top_logprobs", "scripted")  # methods that read an answer from probabilities


class TranscriptError(ValueError):
    """A transcript that cannot be read; the message is one line naming the file and line."""


class Usage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt_tokens: int = 0
    completion_tokens: int = 0


class EventBase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seq: int = 0
    ts: str = ""


class RunStarted(EventBase):
    """What ran: protocol, scenario (a copy and its hashes), models and settings, the unit's input."""

    type: Literal["run_started"] = "run_started"
    schema_version: int = SCHEMA_VERSION
    run_id: str
    protocol: str
    scenario_path: str
    scenario_sha256: str  # the file's bytes (cited)
    scenario: dict[str, Any]
    scenario_content_sha256: Optional[str] = None  # what drives the run; resume compares it
    models: dict[str, str]
    settings: dict[str, dict[str, Any]] = {}
    seed: Optional[int] = None
    versions: dict[str, str] = {}
    unit: str = ""  # the unit's id in its run folder ("conference", an item id, ...)
    inputs: dict[str, Any] = {}  # an item's input (text, target, claim, comments, ...)
    gold: Optional[str] = None
    variant: dict[str, Any] = {}  # a conference of a batch: what it changes (seed, models, personas)


class RunResumed(EventBase):
    type: Literal["run_resumed"] = "run_resumed"
    turns_kept: int = 0
    models: dict[str, str] = {}
    models_changed: bool = False  # resumed with other models, explicitly allowed


class CallDetail(BaseModel):
    """What a call measured or did beyond its reply: a continuation's cut, a choice's or a score's
    probabilities, and how a closed answer was read (`method`)."""

    model_config = ConfigDict(extra="forbid")
    method: str = ""  # likelihood (in-process) | top_logprobs (a server) | structured | text | scripted | completion
    probabilities: dict[str, float] = {}  # choice: each option's, normalised over the options; score: each score's
    logprobs: dict[str, float] = {}  # each option's log-probability under the model, as measured
    bounded: list[str] = []  # options absent from a server's top log-probabilities: their logprob is an upper bound
    expected: Optional[float] = None  # score: the expectation of the score under `probabilities`
    cut: bool = False  # continuation: it stopped mid-sentence (the token bound, a stop) and ends at its last whole one
    uncut: Optional[str] = None  # continuation, when cut: the text as generated
    note: str = ""  # e.g. why a likelihood choice fell back to structured output, or why nothing was cut
    evaluated: Optional[int] = None  # embedded model: prompt tokens it evaluated (the rest were reused from its cache)


class Call(EventBase):
    """One model call: exactly what was sent and what came back. `kind` is what was asked: a chat
    reply, a continuation of a document, a closed choice, a score; `detail` what was measured."""

    type: Literal["call"] = "call"
    role: str
    stage: str = ""
    model: str
    messages: list[dict[str, Any]]
    output: Optional[str] = None  # the structured output asked for (schema title), if any
    reply: str
    usage: Usage = Usage()
    latency_s: float = 0.0
    attempts: int = 1
    cached: bool = False
    finish_reason: Optional[str] = None
    key: str = ""  # the reply cache's key: a resumed unit matches its recorded calls by it
    kind: Literal["chat", "continue", "choice", "score"] = "chat"
    detail: Optional[CallDetail] = None


class Measured(BaseModel):
    """How a closed answer (a conference turn's, an item's label) was read when it was not simply
    written: a decision or scores read from the model's probabilities (`method` likelihood,
    top_logprobs, scripted), or the structured answer a backend without log-probabilities gave
    instead. Kept on the turn's message, so its verdict, score or label follows from the message
    alone (a resumed run rebuilds it, a re-calibration needs no model call)."""

    model_config = ConfigDict(extra="forbid")
    method: str  # likelihood | top_logprobs | scripted (measured) | structured | text (a fallback)
    probabilities: dict[str, float] = {}  # a decision: each option's probability, normalised over the options
    threshold: Optional[float] = None  # a decision: the probability the closing option needed
    distributions: dict[str, dict[str, float]] = {}  # scores: per criterion, each score's probability
    note: str = ""  # e.g. why the backend could not measure
    calibration: str = ""  # "contextual" (Zhao et al. 2021): `calibrated` decides; "": the raw probabilities
    calibrated: dict[str, float] = {}  # each option's probability after calibration
    content_free: dict[str, dict[str, float]] = {}  # calibration: per content-free input, each option's probability


class Message(EventBase):
    """A contribution: a conference turn, or an item's analysis, argument or decision."""

    type: Literal["message"] = "message"
    turn: int
    speaker: str
    role: str
    action: str  # what it was for: open/speak/judge/... (conference), the stage (items)
    topic: Optional[int] = None
    round: int = 1
    content: str
    model: str = ""
    usage: Usage = Usage()
    latency_s: float = 0.0
    calls: int = 1
    decision: Optional[str] = None
    cut: bool = False  # ended at its last complete sentence: the model stopped mid-sentence (its call keeps the rest)
    measured: Optional[Measured] = None  # a decision or scores read from probabilities (see Measured)


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


class Outcome(EventBase):
    """An item's result: the label (or `unparsed`), why, and the reply it was read from."""

    type: Literal["outcome"] = "outcome"
    prediction: str
    explanation: str = ""
    raw: Optional[str] = None
    gold: Optional[str] = None
    decided_by: str = ""


class Error(EventBase):
    type: Literal["error"] = "error"
    speaker: Optional[str] = None
    stage: str
    cause: str
    attempts: int = 0


class RunFinished(EventBase):
    type: Literal["run_finished"] = "run_finished"
    status: Literal["completed", "failed", "interrupted"]
    stop_reason: str
    wall_s: float = 0.0
    totals: dict[str, Any] = {}


EVENT_TYPES = (RunStarted, RunResumed, Call, Message, Verdict, Score, TopicClosed, Coverage, Outcome, Error,
               RunFinished)
Event = Annotated[Union[EVENT_TYPES], Field(discriminator="type")]  # type: ignore[valid-type]
EVENT = TypeAdapter(Event)
