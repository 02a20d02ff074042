"""Turn an agent's message into transcript events (message, verdict, score, topic_closed)."""

from __future__ import annotations

from typing import Optional

from autogen_agentchat.messages import BaseChatMessage

from moot.transcript import EventBase, Message, Score, TopicClosed, Usage, Verdict
from moot.verdicts import CRITERIA, EvaluatorScores, JudgeVerdict, ModeratorDecision, parse_reply
from moot.speaker_selection.conference import Step


def turn_events(message: BaseChatMessage, step: Step, following: Step, turn: int) -> list[EventBase]:
    """All events of one turn, written together so a turn is recorded whole or not at all."""
    meta = message.metadata
    usage = message.models_usage
    events: list[EventBase] = [Message(
        turn=turn, speaker=message.source, role=meta.get("role", ""), action=step.action,
        topic=step.topic, round=step.round, content=message.content, model=meta.get("model", ""),
        usage=Usage(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens) if usage else Usage(),
        latency_s=float(meta.get("latency_s", 0)), calls=int(meta.get("calls", 1)),
        decision=meta.get("decision"),
    )]
    extra = _decision_event(message, step, turn) or _score_event(message, step, turn)
    if extra:
        events.append(extra)
    if following.closed_by:
        events.append(TopicClosed(topic=step.topic, rounds=step.round, closed_by=following.closed_by))
    return events


def _decision_event(message: BaseChatMessage, step: Step, turn: int) -> Optional[Verdict]:
    output = {"judge": JudgeVerdict, "decide": ModeratorDecision}.get(step.action)
    if output is None:
        return None
    parsed = parse_reply(output, message.content)
    common = dict(turn=turn, speaker=message.source, topic=step.topic, round=step.round)
    if parsed.value is None:
        return Verdict(**common, verdict="UNPARSED", raw=message.content, error=parsed.error)
    value = parsed.value
    if isinstance(value, JudgeVerdict):
        return Verdict(**common, verdict=value.verdict, reason=value.reason)
    return Verdict(**common, verdict=value.decision, reason=value.message)


def _score_event(message: BaseChatMessage, step: Step, turn: int) -> Optional[Score]:
    if step.action != "evaluate":
        return None
    return score_from_reply(message.content, turn=turn, speaker=message.source, topic=step.topic,
                            model=message.metadata.get("model", ""))


def score_from_reply(content: str, **fields) -> Score:
    """A Score event from an evaluator reply; unparsed replies keep their raw text."""
    parsed = parse_reply(EvaluatorScores, content)
    if parsed.value is None:
        return Score(**fields, parsed=False, raw=content, error=parsed.error)
    value = parsed.value
    return Score(**fields, scores={c: getattr(value, c) for c in CRITERIA}, overall=value.overall,
                 rationale=value.rationale)
