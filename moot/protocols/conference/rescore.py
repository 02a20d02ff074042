"""Re-scoring a finished conference from its transcript, never re-running participants.

Three roles read only recorded messages:
- evaluator: re-evaluates each topic's debate on the ten criteria with another model;
- grader: meta-evaluates the judge (Heller et al. §4.2, Table 5): the conference is split at
  each judge decision, and the grader sees the debate of that topic up to the decision plus
  the decision itself, and rates correctness and format adherence 1-10 with an explanation;
- assessor: re-measures the reference coverage of each closed topic that has a reference outcome,
  shown what the conference's assessor is shown (the items, the participants' turns).
Each call is recorded with the `score` or `coverage` it gave (the evaluator's `rescore:SPEC`, the
grader's `grader:SPEC`, the assessor's `assessor:SPEC`), appended to the copy `moot score`
writes; the original is left untouched.

The evaluator and the grader read their scores as the recorded scenario's `choice` says: with
likelihood (the default on the embedded model) each score is its expectation under the model's
probabilities, recorded with the distribution, and the rationale or explanation is a separate
free-text reply (moot.agents.conference.measures); otherwise they write them under structured
output. A base model is shown the debate as a transcript document (conference_document).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence, TypeVar

from autogen_core.models import LLMMessage, UserMessage
from pydantic import BaseModel

from moot.agents.conference.agent import CONVERSATION, DEBATE, turn_prompt
from moot.agents.conference.context import Said
from moot.agents.conference.coverage import coverage_event, debate_of, reference_text
from moot.agents.conference.document import TranscriptDocument
from moot.agents.document import MIN_TOKENS
from moot.agents.conference.measures import (Answer, ChatPrompt, assess, by_likelihood, evaluate, expected_scores,
                                             in_document, spoken)
from moot.agents.conference.reading import Reading
from moot.agents.prompts import inset, render
from moot.kit import Continue, EventBase, Message, Score as ScoreRequest, Transcript, UnitContext, parse_reply
from moot.protocols.conference.events import Coverage, GradeFields, Score, TopicClosed, Where
from moot.contract.protocol import Rescore, Rescored
from moot.protocols.conference.schema import Scenario
from moot.protocols.conference.setup import setup_of
from moot.protocols.conference.turns import score_from_reply
from moot.protocols.conference.texts import coverage_text, score_line, shown_score
from moot.protocols.conference.verdicts import CRITERIA, CRITERIA_TEXT, EvaluatorScores, JudgeGrade, coverage_model

DECIDERS = ("evaluator", "grader", "assessor")
GRADER_NAME, ASSESSOR_NAME = "Grader", "Assessor"


E = TypeVar("E", bound=EventBase)


@dataclass(frozen=True)
class Decision:
    """One judge decision and the debate the judge had seen when it made it."""

    judge: Message
    debate: tuple[Message, ...]

    @property
    def topic(self) -> int:
        assert self.judge.part is not None  # a judge rules on a topic
        return self.judge.part


def topic_debate(messages: Sequence[Message], topic: Optional[int], until_turn: int) -> tuple[Message, ...]:
    """The topic's turns before `until_turn`, judges and evaluators included (they shape the debate)."""
    return tuple(m for m in messages if m.part == topic and m.turn < until_turn)


def judge_decisions(transcript: Transcript) -> list[Decision]:
    messages = transcript.messages
    return [Decision(m, topic_debate(messages, m.part, m.turn)) for m in messages if m.action == "judge"]


def closed_topics(transcript: Transcript) -> list[tuple[int, tuple[Message, ...]]]:
    """Each topic that has a debate, with its participant turns and rulings (no evaluator or
    assessor turns)."""
    messages = transcript.messages
    topics = sorted({m.part for m in messages if m.part is not None and m.action == "speak"})
    return [(t, tuple(m for m in messages if m.part == t and m.action not in ("evaluate", "assess"))) for t in topics]


def said(m: Message, reading: Reading) -> Said:
    """A recorded turn as the agents read it."""
    return Said(m.speaker, reading.display(m.action, m.content, m.measured), m.action, m.part, m.round, m.turn,
                m.decision)


class Rescorer:
    """Builds prompts from the recorded scenario's templates and asks each role through `ctx`."""

    def __init__(self, scenario: Scenario, transcript: Transcript, ctx: UnitContext):
        self.s, self.transcript, self.ctx = scenario, transcript, ctx
        self.setup = setup_of(scenario)
        self.document = TranscriptDocument(self.setup)  # holds only the setup: one serves every topic

    def fields(self, name: str, topic: int, round_: int = 1, decision: str = "") -> dict[str, object]:
        s = self.s
        return {"name": name, "persona": "", "title": s.title, "task": s.task_text(),
                "topic": s.topics[topic] if topic < len(s.topics) else "", "topic_number": topic + 1,
                "topic_count": len(s.topics), "round": round_, "judge_decision": inset(decision),
                "participants": self.setup.participants(),
                "criteria": "\n".join(f"- {c}: {CRITERIA_TEXT[c]}" for c in CRITERIA)}

    def prompt(self, role: str, fields: Mapping[str, object], shown: Sequence[Said], heading: str = CONVERSATION,
               turn: str = "") -> list[LLMMessage]:
        """`role`'s system prompt, then what it is shown and its instruction (`turn`, default `<role>_turn`)."""
        templates = self.setup.templates
        return turn_prompt(render(templates[f"{role}_system"], fields), heading, shown,
                           render(templates[turn or f"{role}_turn"], fields), self.setup.labels)

    def chat(self, role: str, fields: Mapping[str, object], shown: Sequence[Said],
             heading: str = CONVERSATION) -> ChatPrompt:
        """`role`'s prompt for one question of a measured answer: the instruction `key`, `extra` fields."""
        return lambda key, extra: self.prompt(role, {**fields, **extra}, shown, heading, turn=key)

    def _record(self, answer: Answer, event: E) -> E:
        self.ctx.record_replies(answer.replies, event)
        return event

    def shown(self, debate: Sequence[Message]) -> list[Said]:
        return [said(m, self.setup.reading) for m in debate]

    async def _ask(self, role: str, messages: list[LLMMessage], output: type[BaseModel],
                   make_event: Callable[[str], E]) -> E:
        """One call; its record (unless the transcript already held it) and the event it gives, appended together."""
        reply = await self.ctx.call(role, messages, output, stage=f"rescore {role}", record=False)
        event = make_event(reply.text)
        self.ctx.record_replies([reply], event)
        return event

    async def evaluate(self, spec: str) -> list[Score]:
        document = in_document(self.ctx, "evaluator")
        likelihood = by_likelihood(self.s.choice, spec, document)
        name = self.s.evaluator.name if self.s.evaluator else "Evaluator"

        async def one(topic: int, debate: tuple[Message, ...]) -> Score:
            fields, shown = self.fields(name, topic), self.shown(debate)
            where = Where(turn=debate[-1].turn, speaker=f"rescore:{spec}", topic=topic, model=spec)
            if not likelihood:
                return await self._ask("evaluator", self.prompt("evaluator", fields, shown), EvaluatorScores,
                                       lambda reply: score_from_reply(reply, **where))
            answer = await evaluate(self.ctx, "evaluator", name, self.document, shown, topic, document,
                                    self.chat("evaluator", fields, shown), "rescore evaluator")
            return self._record(answer, score_from_reply(answer.content, answer.measured, **where))

        return list(await asyncio.gather(*(one(t, d) for t, d in closed_topics(self.transcript))))

    async def grade(self, spec: str) -> list[Score]:
        document = in_document(self.ctx, "grader")
        likelihood = by_likelihood(self.s.choice, spec, document)

        async def one(decision: Decision) -> Score:
            judge = decision.judge
            fields = self.fields(GRADER_NAME, decision.topic, judge.round, judge.content.strip())
            shown = self.shown(decision.debate)
            if not likelihood:
                return await self._ask("grader", self.prompt("grader", fields, shown), JudgeGrade,
                                       lambda reply: grade_score(reply, judge, spec))
            return await self.measured_grade(fields, shown, document, judge, spec)

        return list(await asyncio.gather(*(one(d) for d in judge_decisions(self.transcript))))

    async def measured_grade(self, fields: Mapping[str, object], shown: Sequence[Said], document: bool, judge: Message,
                             spec: str) -> Score:
        """The grader's rating as an expected score, then its explanation as a separate reply; the
        Score of the grade (unparsed when no score could be read), recorded with its calls."""
        templates = self.setup.templates
        rating = ScoreRequest(lo=1, hi=10, prefix=templates["document_grade"], document=document)
        scores, measured, replies = await expected_scores(
            self.ctx, "grader", [("correctness_format", self.prompt("grader", fields, shown, turn="grader_score_turn"),
                                  rating)], "rescore grader")
        explain = self.prompt("grader", fields, shown, turn="grader_explain_turn")
        if document:
            request = Continue(document=True, prefix=templates["document_explain"], stop=("\n\n",),
                               min_tokens=MIN_TOKENS)
            documents: list[LLMMessage] = [UserMessage(content=str(m.content), source="document") for m in explain]
            reply = await self.ctx.call("grader", documents,
                                        request=request, stage="rescore grader", record=False)
        else:
            reply = await self.ctx.call("grader", explain, stage="rescore grader", record=False)
        explanation, _ = spoken(reply)
        score = scores["correctness_format"]
        common = GradeFields(turn=judge.turn, speaker=f"grader:{spec}", topic=judge.part, model=spec,
                             kind="judge_decision", method=measured.method, distributions=measured.distributions)
        if score is None:
            event = Score(**common, parsed=False, raw=json.dumps({"score": None, "explanation": explanation}),
                          error="no score could be read")
        else:
            event = Score(**common, scores={"correctness_format": score}, overall=score, rationale=explanation)
        self.ctx.record_replies([*replies, reply], event)
        return event

    async def assess(self, spec: str) -> list[Coverage]:
        references = self.setup.references
        closed = {e.topic for e in self.transcript.of_type(TopicClosed)}
        history = self.shown(self.transcript.messages)

        document = in_document(self.ctx, "assessor")
        likelihood = by_likelihood(self.s.choice, spec, document)

        async def one(topic: int) -> Coverage:
            items, debate = references[topic], debate_of(history, topic)
            fields = {**self.fields(ASSESSOR_NAME, topic), "reference": reference_text(items)}
            where = Where(turn=debate[-1].turn, speaker=f"assessor:{spec}", topic=topic, model=spec)
            if not likelihood:
                output = coverage_model(tuple(i.name for i in items))
                return await self._ask("assessor", self.prompt("assessor", fields, debate, DEBATE), output,
                                       lambda reply: coverage_event(reply, items, debate, **where))
            answer = await assess(self.ctx, "assessor", self.document, debate, items, topic, document,
                                  self.chat("assessor", fields, debate, DEBATE), "rescore assessor")
            return self._record(answer, coverage_event(answer.content, items, debate, answer.measured, **where))

        topics = [t for t in sorted(references) if t in closed and debate_of(history, t)]
        return list(await asyncio.gather(*(one(t) for t in topics)))


def grade_score(reply: str, judge: Message, spec: str) -> Score:
    parsed = parse_reply(JudgeGrade, reply)
    common = GradeFields(turn=judge.turn, speaker=f"grader:{spec}", topic=judge.part, model=spec, kind="judge_decision")
    if parsed.value is None:
        return Score(**common, parsed=False, raw=reply, error=parsed.error)
    return Score(**common, scores={"correctness_format": parsed.value.score}, overall=parsed.value.score,
                 rationale=parsed.value.explanation)


def grade_table(scores: Sequence[Score], decisions: Sequence[Decision]) -> list[str]:
    """Table 5 of the paper for one transcript: each judge decision's grade, then the mean."""
    verdict_of = {d.judge.turn: d for d in decisions}
    lines = ["| # | topic | round | judge decision | grade | explanation |", "|---|---|---|---|---|---|"]
    graded: list[float] = []
    for number, score in enumerate(sorted(scores, key=lambda s: s.turn), 1):
        decision = verdict_of[score.turn]
        judge = decision.judge
        grade = shown_score(score, score.overall) if score.parsed else "unparsed"
        if score.parsed and score.overall is not None:
            graded.append(score.overall)
        lines.append(f"| {number} | {decision.topic + 1} | {judge.round} | {judge.decision or '?'} | {grade} | "
                     f"{' '.join((score.rationale or score.error or '').split()).replace('|', '/')[:80]} |")
    mean: Optional[float] = sum(graded) / len(graded) if graded else None
    lines.append(f"| mean | | | | {mean:.2f} | {len(graded)} of {len(scores)} graded |" if mean is not None
                 else f"| mean | | | | – | no parsed grades of {len(scores)} |")
    return lines


async def rescore(s: Scenario, job: Rescore, ctx: UnitContext) -> Rescored:
    """`moot score` on a conference: new evaluator scores per topic, grades of the judge, and/or
    reference coverage per topic."""
    rescorer = Rescorer(s, job.transcript, ctx)
    lines: list[str] = []
    if "evaluator" in job.roles:
        scores = await rescorer.evaluate(job.roles["evaluator"])
        lines += [f"Topic {sc.topic + 1 if sc.topic is not None else '-'}: {score_line(sc)}" for sc in scores]
    if "grader" in job.roles:
        grades = await rescorer.grade(job.roles["grader"])
        lines += [f"Judge decisions graded by {job.roles['grader']} (cf. Heller et al. Table 5):",
                  *grade_table(grades, judge_decisions(job.transcript))]
    if "assessor" in job.roles:
        lines += [f"Topic {c.topic + 1}: {coverage_text(c)}" for c in await rescorer.assess(job.roles["assessor"])]
    return Rescored(lines=tuple(lines))
