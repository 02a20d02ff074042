"""A conference's turns as events, and where a conference continues from its own transcript.

A turn is written in one append: the `call` it made, its `message`, and its companions (the
judge's `verdict`, the evaluator's `score`, the assessor's `coverage`, the `topic_closed` it
implies). A run killed in the
middle of that write leaves a prefix of those lines; the resume point keeps every complete turn,
writes the companions a half-written turn lacks (they follow from its message), and leaves a call
whose message never got written to be served back to the agent that asks it again."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, Sequence

from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_core.models import RequestUsage

from moot.agents.conference.agent import measured_of, said_of, turn_metadata
from moot.agents.conference.setup import ConferenceSetup
from moot.agents.conference.context import Said
from moot.agents.conference.coverage import coverage_event, debate_of
from moot.agents.conference.reading import Reading
from moot.kit import EventBase, Human, MEASURED, Measured, Message, MootError, PolicyError, Transcript, Usage
from moot.protocols.conference.events import (Coverage, Score, ScoreHow, TopicClosed, Verdict, VerdictFields,
                                              VerdictHow, Where)
from moot.speaker_selection.conference import Step, Turn, walk
from moot.protocols.conference.verdicts import CRITERIA, JudgeVerdict, read_scores

if TYPE_CHECKING:
    from typing_extensions import Unpack


def turn_events(message: BaseChatMessage, step: Step, following: Step, turn: int, setup: ConferenceSetup,
                earlier: Sequence[Said]) -> list[EventBase]:
    """The message of one turn and its companions, recorded together (with its call); `earlier`:
    the turns before it, as the agents read them. A seat's turn (`--human`) is preceded by its
    `human` record."""
    meta = message.metadata
    human = [Human.model_validate_json(meta["human"]).model_copy(update={"turn": turn})] if "human" in meta else []
    usage = message.models_usage
    measured = measured_of(message)
    event = Message(
        turn=turn, speaker=message.source, role=meta.get("role", ""), action=step.action,
        part=step.topic, round=step.round, content=message.to_text(), model=meta.get("model", ""),
        usage=Usage(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens) if usage else Usage(),
        latency_s=float(meta.get("latency_s", 0)), calls=int(meta.get("calls", 1)),
        decision=meta.get("decision"), cut=meta.get("cut") == "true", measured=measured,
        source="human" if meta.get("source") == "human" else "model",
    )
    return [*human, event, *companions(message, step, following, turn, setup, earlier, measured)]


def companions(message: BaseChatMessage, step: Step, following: Step, turn: int, setup: ConferenceSetup,
               earlier: Sequence[Said], measured: Optional[Measured]) -> list[EventBase]:
    """What a turn implies besides its message: a verdict, score or coverage, and a topic_closed;
    `measured`: how its closed answer was read (`measured_of(message)`)."""
    events: list[EventBase] = []
    extra = (_decision_event(message, step, turn, setup.reading, measured)
             or _score_event(message, step, turn, measured)
             or _coverage_event(message, step, turn, setup, earlier, measured))
    if extra:
        events.append(extra)
    if following.closed_by:
        events.append(TopicClosed(topic=step.in_topic, rounds=step.round, closed_by=following.closed_by))
    return events


def _decision_event(message: BaseChatMessage, step: Step, turn: int, reading: Reading,
                    measured: Optional[Measured]) -> Optional[Verdict]:
    """The judge's (or deciding moderator's) verdict; an unparsed one, or any plain-text judge's,
    keeps the raw reply. One read from probabilities says so, with them."""
    if step.action not in ("judge", "decide"):
        return None
    parsed = reading.parse(step.action, message.to_text())
    assert parsed is not None  # a judge's or deciding moderator's turn is always read
    common = VerdictFields(turn=turn, speaker=message.source, topic=step.topic, round=step.round, **_how(measured))
    if parsed.value is None:
        return Verdict(**common, verdict="UNPARSED", raw=message.to_text(), error=parsed.error)
    value = parsed.value
    if isinstance(value, JudgeVerdict):
        raw = message.to_text() if reading.output("judge") is None and measured is None else None
        return Verdict(**common, verdict=value.verdict, reason=value.reason or _reading(measured), raw=raw)
    return Verdict(**common, verdict=value.decision, reason=value.message)


def _how(measured: Optional[Measured]) -> VerdictHow:
    """A verdict's fields saying how it was read from probabilities (nothing for a written one)."""
    if measured is None:
        return {}
    return VerdictHow(method=measured.method, probabilities=measured.probabilities, threshold=measured.threshold)


def _reading(measured: Optional[Measured]) -> str:
    """Why a measured verdict is what it is: `p(agree)=0.83 >= 0.80 (likelihood)`."""
    if measured is None:
        return ""
    if measured.method not in MEASURED or not measured.probabilities:
        return f"answered in {measured.method} output" + (f": {measured.note}" if measured.note else "")
    option, p = next(iter(measured.probabilities.items()))
    relation = ">=" if p >= (measured.threshold or 0) else "<"
    return f"p({option})={p:.2f} {relation} {measured.threshold:.2f} (measured: {measured.method})"


def _score_event(message: BaseChatMessage, step: Step, turn: int, measured: Optional[Measured]) -> Optional[Score]:
    if step.action != "evaluate":
        return None
    return score_from_reply(message.to_text(), measured, turn=turn, speaker=message.source,
                            topic=step.topic, model=message.metadata.get("model", ""))


def _coverage_event(message: BaseChatMessage, step: Step, turn: int, setup: ConferenceSetup,
                    earlier: Sequence[Said], measured: Optional[Measured]) -> Optional[Coverage]:
    if step.action != "assess":
        return None
    return coverage_event(message.to_text(), setup.references[step.in_topic], debate_of(earlier, step.in_topic),
                          measured, turn=turn, speaker=message.source, topic=step.topic,
                          model=message.metadata.get("model", ""))


def score_from_reply(content: str, measured: Optional[Measured] = None, **fields: Unpack[Where]) -> Score:
    """A Score event from an evaluator reply (its scores written, or `measured`); unparsed replies
    keep their raw text."""
    parsed = read_scores(content, measured is not None)
    how = ScoreHow(method=measured.method, distributions=measured.distributions) if measured else ScoreHow()
    if parsed.value is None:
        return Score(**fields, **how, parsed=False, raw=content, error=parsed.error)
    value = parsed.value
    scores = {c: getattr(value, c) for c in CRITERIA}
    written = measured is None or measured.method not in MEASURED
    return Score(**fields, **how, scores=scores, overall=value.overall, rationale=value.rationale,
                 suspect=suspect_of(list(scores.values())) if written else "")


def suspect_of(values: Sequence[float]) -> str:
    """Why a set of written scores looks filled in rather than judged: "constant" (one value for
    every criterion) or "monotone" (rising or falling through the criteria in their listed order,
    as the 1, 2, ..., 10 llama_cpp.server's structured output gave); "" otherwise."""
    steps = [b - a for a, b in zip(values, values[1:])]
    if not steps:
        return ""
    if all(d == 0 for d in steps):
        return "constant"
    return "monotone" if all(d > 0 for d in steps) or all(d < 0 for d in steps) else ""


class ResumeError(MootError, ValueError):
    """A conference transcript that does not follow this scenario's routing; one line."""


@dataclass
class ResumePoint:
    """Prior turns as the policy sees them, as AutoGen messages, and what a half-written turn lacks."""

    turns: list[Turn] = field(default_factory=list)
    messages: list[TextMessage] = field(default_factory=list)
    missing: list[EventBase] = field(default_factory=list)
    said: list[Said] = field(default_factory=list)  # the turns as the agents read them


def resume_point(transcript: Transcript | None, setup: ConferenceSetup) -> ResumePoint:
    """Where a conference continues from (see the module docstring)."""
    if transcript is None:
        return ResumePoint()
    messages = transcript.messages
    turns = [Turn(m.speaker, m.decision) for m in messages]
    try:
        steps = walk(setup.plan, turns)
    except PolicyError as exc:
        raise ResumeError(f"{transcript.path}: transcript does not follow this scenario's routing: {exc}") from None
    chat = [as_chat(m) for m in messages]
    said = [said_of(c, s, m.turn, setup.reading) for c, s, m in zip(chat, steps, messages)]
    missing: list[EventBase] = []
    if messages:
        last = messages[-1]
        expected = companions(chat[-1], steps[-2], steps[-1], last.turn, setup, said[:-1], measured_of(chat[-1]))
        recorded = transcript.events[transcript.events.index(last) + 1:]
        have = {type(e) for e in recorded}
        missing = [e for e in expected if type(e) not in have]
    return ResumePoint(turns, chat, missing, said)


def as_chat(event: Message) -> TextMessage:
    """A recorded turn as the AutoGen message the agents saw."""
    step = Step(event.speaker, event.action, event.part, event.round)  # type: ignore[arg-type]
    meta = turn_metadata(step, event.role, event.decision, event.model, latency_s=event.latency_s, calls=event.calls,
                         cut=event.cut, measured=event.measured)
    if event.source == "human":
        meta["source"] = event.source
    usage = RequestUsage(prompt_tokens=event.usage.prompt_tokens, completion_tokens=event.usage.completion_tokens)
    return TextMessage(content=event.content, source=event.speaker, metadata=meta, models_usage=usage)
