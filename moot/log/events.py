"""The event log's core vocabulary: one typed event per line, the same envelope for every protocol.

A run of one unit (a whole run of a scenario, or one item of a dataset) is `run_started`, then
its events, then `run_finished`; a continued run adds `run_resumed`. Every model call is a `call`
event (the exact messages sent, the reply, usage, latency, attempts, whether it came from the
cache); what a role contributes is a `message`; a unit that predicts ends with an `outcome`.
A protocol adds its own event types (moot.log.registry), versioned apart from this schema.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from moot.errors import MootError

SCHEMA_VERSION = 3
Json = Union[None, bool, int, float, str, list["Json"], dict[str, "Json"]]  # a decoded JSON value
JsonObject = dict[str, Json]
MEASURED = ("likelihood", "top_logprobs", "scripted")  # methods that read an answer from probabilities


class TranscriptError(MootError, ValueError):
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
    variant: dict[str, Any] = {}  # a run of a batch: what it changes (seed, models, personas)
    event_versions: dict[str, int] = {}  # the version of each protocol event type it writes (absent: 1)


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
    threads: Optional[int] = None  # embedded model: the CPU threads llama.cpp ran it on (moot.models.backends.local.cores)
    extra_buffers: Optional[bool] = None  # embedded model: whether llama.cpp used extra buffer types (moot.models.backends.local.extra_buffers)


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
    cost_usd: Optional[float] = None  # what it cost at the model's price (a cached reply: 0; None: no price)


class Measured(BaseModel):
    """How a turn's closed answer was read when it was not simply written: a decision, scores or a
    label read from the model's probabilities (`method` likelihood, top_logprobs, scripted), or the
    structured answer a backend without log-probabilities gave instead. Kept on the turn's
    message, so what the protocol records from it follows from the message alone (a resumed run
    rebuilds it, a re-calibration needs no model call)."""

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
    """A contribution: a turn of a deliberation, or an item's analysis, argument or decision."""

    type: Literal["message"] = "message"
    turn: int
    speaker: str
    role: str
    action: str  # what it was for: the protocol's step (open, speak, judge, ...) or an item's stage
    part: Optional[int] = None  # the part of the unit it belongs to, as its protocol numbers them (0-based)
    round: int = 1
    content: str
    model: str = ""
    usage: Usage = Usage()
    latency_s: float = 0.0
    calls: int = 1
    decision: Optional[str] = None
    cut: bool = False  # ended at its last complete sentence: the model stopped mid-sentence (its call keeps the rest)
    measured: Optional[Measured] = None  # a decision or scores read from probabilities (see Measured)
    source: Literal["model", "human"] = "model"  # who gave it: a model, or a person at a seat (its `human` event)

    @model_serializer(mode="wrap")
    def _without_model_source(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A model's message is written as before seats existed (no `source`), so a run without a
        person at a seat stays readable by earlier moot versions."""
        data: dict[str, Any] = handler(self)
        if data.get("source") == "model":
            del data["source"]
        return data


class Human(EventBase):
    """A person's turn at a seat (`moot run --human SEAT`), recorded just before the message it
    gave: what was asked, exactly what the person typed (each answer, in order), how long it took,
    and, when the seat's time limit ran out, what stood in (`fallback`: the seat's model answered,
    or the turn was skipped). Earlier transcripts have none; their messages are all `model`."""

    type: Literal["human"] = "human"
    turn: int  # the message it gave (or the stand-in's)
    seat: str  # the seat as the person took it (`judge`, `participants`, an agent's name)
    speaker: str
    asked: list[str] = []  # each question, as put to the person
    answers: list[str] = []  # exactly what the person typed, one per question answered
    seconds: float = 0.0  # from the first question shown to the last answer (or the time-out)
    limit_s: Optional[float] = None  # the seat's time limit; None: it waits
    fallback: Literal["", "model", "skip"] = ""  # "": the person answered; else what stood in at the limit


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


CORE_TYPES = (RunStarted, RunResumed, Call, Message, Human, Outcome, Error, RunFinished)
