"""Re-score a finished conference from its transcript, never re-running participants.

Two graders read only recorded messages:
- evaluator: re-evaluates each topic's debate on the ten criteria with another model;
- grader: meta-evaluates the judge (Heller et al. §4.2, Table 5): the conference is split at
  each judge decision, and the grader sees the debate of that topic up to the decision plus
  the decision itself, and rates correctness and format adherence 1-10 with an explanation.
New score events are appended to a copy of the transcript; the original is left untouched.
"""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from autogen_core.models import ChatCompletionClient, SystemMessage, UserMessage

from moot.agents.conference import display_text
from moot.agents.prompts import default_templates, render
from moot.protocols.conference_turns import score_from_reply
from moot.models.calls import RetryPolicy, complete
from moot.scenario import Generation
from moot.events import Message, Score
from moot.transcript import EventLog, Transcript
from moot.verdicts import CRITERIA, CRITERIA_TEXT, JudgeGrade, parse_reply

GRADER_NAME = "Grader"


@dataclass(frozen=True)
class Decision:
    """One judge decision and the debate the judge had seen when it made it."""

    judge: Message
    debate: tuple[Message, ...]


def topic_debate(messages: Sequence[Message], topic: int, until_turn: int) -> tuple[Message, ...]:
    """The topic's turns before `until_turn`, judges and evaluators included (they shape the debate)."""
    return tuple(m for m in messages if m.topic == topic and m.turn < until_turn)


def judge_decisions(transcript: Transcript) -> list[Decision]:
    messages = transcript.of_type(Message)
    return [Decision(m, topic_debate(messages, m.topic, m.turn)) for m in messages if m.action == "judge"]


def closed_topics(transcript: Transcript) -> list[tuple[int, tuple[Message, ...]]]:
    """Each topic that has a debate, with its participant turns and rulings (no evaluator turns)."""
    messages = transcript.of_type(Message)
    topics = sorted({m.topic for m in messages if m.topic is not None and m.action == "speak"})
    return [(t, tuple(m for m in messages if m.topic == t and m.action != "evaluate")) for t in topics]


def history(debate: Sequence[Message]) -> str:
    return "\n\n".join(f"{m.speaker}: {display_text(m.action, m.content)}" for m in debate)


class Rescorer:
    """Builds prompts from the recorded scenario's templates and calls one model per role."""

    def __init__(self, transcript: Transcript, retry: RetryPolicy, concurrency: int = 1):
        self.transcript = transcript
        scenario = transcript.started.scenario
        self.templates = {**default_templates("conference"), **scenario.get("prompts", {})}
        self.topics: list[str] = list(scenario.get("topics", []))
        self.settings = Generation(**scenario.get("generation", {})).model_dump()
        self.retry = retry
        self._slots = asyncio.Semaphore(concurrency)

    def fields(self, name: str, topic: int, round_: int = 1, decision: str = "") -> dict[str, object]:
        scenario = self.transcript.started.scenario
        return {"name": name, "persona": "", "title": scenario.get("title", ""), "task": scenario.get("task", ""),
                "topic": self.topics[topic] if topic < len(self.topics) else "", "topic_number": topic + 1,
                "topic_count": len(self.topics), "round": round_, "judge_decision": decision,
                "participants": ", ".join(p.get("name", "") for p in scenario.get("participants", [])),
                "criteria": "\n".join(f"- {c}: {CRITERIA_TEXT[c]}" for c in CRITERIA)}

    def prompt(self, role: str, fields: dict, debate: Sequence[Message]) -> list:
        instruction = render(self.templates[f"{role}_turn"], fields)
        body = f"Conversation so far:\n{history(debate)}\n\n{instruction}"
        return [SystemMessage(content=render(self.templates[f"{role}_system"], fields)),
                UserMessage(content=body, source="user")]

    async def _ask(self, client: ChatCompletionClient, messages: list, output) -> str:
        async with self._slots:
            done = await complete(client, messages, output=output, retry=self.retry)
        return done.text

    async def evaluate(self, client: ChatCompletionClient, spec: str) -> list[Score]:
        async def one(topic: int, debate: tuple[Message, ...]) -> Score:
            from moot.verdicts import EvaluatorScores

            reply = await self._ask(client, self.prompt("evaluator", self.fields("Evaluator", topic), debate),
                                    EvaluatorScores)
            return score_from_reply(reply, turn=debate[-1].turn, speaker=f"rescore:{spec}", topic=topic,
                                    model=spec)

        return list(await asyncio.gather(*(one(t, d) for t, d in closed_topics(self.transcript))))

    async def grade(self, client: ChatCompletionClient, spec: str) -> list[Score]:
        async def one(decision: Decision) -> Score:
            judge = decision.judge
            fields = self.fields(GRADER_NAME, judge.topic, judge.round, judge.content.strip())
            reply = await self._ask(client, self.prompt("grader", fields, decision.debate), JudgeGrade)
            parsed = parse_reply(JudgeGrade, reply)
            common = dict(turn=judge.turn, speaker=f"grader:{spec}", topic=judge.topic, model=spec,
                          kind="judge_decision")
            if parsed.value is None:
                return Score(**common, parsed=False, raw=reply, error=parsed.error)
            return Score(**common, scores={"correctness_format": parsed.value.score},
                         overall=parsed.value.score, rationale=parsed.value.explanation)

        return list(await asyncio.gather(*(one(d) for d in judge_decisions(self.transcript))))


def copy_complete(transcript: Transcript, out: Path) -> int:
    """Copy the transcript's complete lines to `out`; return the next sequence number."""
    data = transcript.path.read_bytes()
    out.parent.mkdir(parents=True, exist_ok=True)
    if transcript.torn_tail:
        data = data[: data.rfind(b"\n") + 1]
        out.write_bytes(data)
    else:
        shutil.copyfile(transcript.path, out)
    return transcript.events[-1].seq + 1


def append_scores(transcript: Transcript, out: Path, scores: Sequence[Score]) -> None:
    writer = EventLog(out, copy_complete(transcript, out))
    try:
        writer.append(*scores)
    finally:
        writer.close()


def grade_table(scores: Sequence[Score], decisions: Sequence[Decision], topics: Sequence[str]) -> list[str]:
    """Table 5 of the paper for one transcript: each judge decision's grade, then the mean."""
    verdict_of = {d.judge.turn: d for d in decisions}
    lines = ["| # | topic | round | judge decision | grade | explanation |", "|---|---|---|---|---|---|"]
    graded = []
    for number, score in enumerate(sorted(scores, key=lambda s: s.turn), 1):
        judge = verdict_of[score.turn].judge
        decision = judge.decision or "?"
        grade = str(score.overall) if score.parsed else "unparsed"
        if score.parsed:
            graded.append(score.overall)
        lines.append(f"| {number} | {judge.topic + 1} | {judge.round} | {decision} | {grade} | "
                     f"{' '.join((score.rationale or score.error or '').split()).replace('|', '/')[:80]} |")
    mean: Optional[float] = sum(graded) / len(graded) if graded else None
    lines.append(f"| mean | | | | {mean:.2f} | {len(graded)} of {len(scores)} graded |" if mean is not None
                 else f"| mean | | | | – | no parsed grades of {len(scores)} |")
    return lines
