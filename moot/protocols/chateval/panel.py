"""One ChatEval unit run: a panel of referees per order of the answers, turn by turn, as its strategy says."""

from __future__ import annotations

import asyncio
from typing import Any, Mapping, Optional, Sequence

from autogen_agentchat.messages import BaseChatMessage
from autogen_core.models import AssistantMessage, LLMMessage, UserMessage

from moot.agents.prompts import inset, render
from moot.contract.protocol import Outcome
from moot.kit import (
    Asking, Continue, Message, PersonTurn, Question, Reply, Score, Seat, StageAgent, UnitContext, answer_model,
    cancel_calls, choice_method, spoken_of,
)
from moot.protocols.chateval.events import Judgement, aggregate, assistants, decide, preference, read_scores
from moot.protocols.chateval.schema import HI, LO, ORDERS, ChatEvalScenario, Order
from moot.speaker_selection.chateval import SUMMARIZER, Turn, next_speaker


MIN_TOKENS = 20  # a base model's line: as the conference's document measured (shorter turns said nothing)
NO_REPEAT = 7  # ... and never 7 words in a row copied from the document
OPENERS = ("(", '"', "[", "*", "'")


class _Panel:
    """The calls of one order's panel: each turn's prompt from what its strategy shows it, the
    calls of a simultaneous turn started together, the last turn's judgements."""

    def __init__(self, s: ChatEvalScenario, ctx: UnitContext, order: Order):
        self.s, self.ctx, self.order = s, ctx, order
        self.plan, self.names = s.plan(), s.names()
        self.schedule = self.plan.schedule()
        self.templates = s.templates()
        question, a, b = (str(ctx.inputs.get(k) or "") for k in ("question", "response_a", "response_b"))
        first, second = (a, b) if order != "ba" else (b, a)
        self.fields = {"question": question, "response_1": first, "response_2": second, "response": a,
                       "count": len(s.referees), "turns": s.turns,
                       "cast": " ".join(f"{r.name} is {r.describe.rstrip('.')}." for r in s.referees if r.describe)}
        self.personas = {f"referee_{i}": r.persona for i, r in enumerate(s.referees, 1)}
        self.said: dict[int, str] = {}
        self.dropped: set[int] = set()  # last-turn replies whose scores could not be read: the code drops them
        self.calls: dict[int, asyncio.Future[str]] = {}
        self.judgements: dict[int, Judgement] = {}

    def suffix(self, key: str) -> str:
        return self.templates[key + ("_scores" if self.s.task == "scores" else "")]

    def agent(self, role: str) -> StageAgent:
        async def respond(thread: Sequence[BaseChatMessage]) -> str:
            position = len(spoken_of(thread))
            if position not in self.calls:
                for p in self.plan.together(position):
                    self.calls[p] = asyncio.ensure_future(self.ask(p))
            return await self.calls[position]

        return StageAgent(role, respond)

    def seen(self, position: int) -> list[int]:
        return [p for p in self.plan.shown(position) if p not in self.dropped]

    def in_document(self, role: str) -> bool:
        return self.ctx.engine.model_kind(self.ctx.model(role), role) == "base"

    async def ask(self, position: int) -> str:
        turn = self.schedule[position]
        role, name = turn.speaker, self.names[turn.speaker]
        stage = self.order if not turn.summary else f"{self.order}:{turn.referee}"
        final = self.plan.final(position)
        seat = self.ctx.seat(role) if not turn.summary else None
        person = await self.seated(position, seat, stage) if seat is not None else None
        if person is not None and person.said is not None:
            self.said[position] = person.said.content
            return person.said.content
        document = self.document(position) if self.in_document(role) else None
        messages: list[LLMMessage] = [UserMessage(content=document or self.prompt(position), source="user")]
        request = self.continuation(document, turn) if document is not None else None
        reading = decide(self.order) if final and self.method(role) == "text" else None
        reply = await self.ctx.call(role, messages, request=request, stage=stage, round=turn.round, speaker=name,
                                    decide=reading)
        if final:
            await self.judge(position, messages, reply, document)
        if person is not None and person.stand_in is not None:
            self.ctx.stood_in(person.stand_in)
        self.said[position] = reply.text
        return reply.text

    async def seated(self, position: int, seat: Seat, stage: str) -> PersonTurn:
        """A person's turn as a referee (`--human referee_1`): shown what the referee's model would
        be (the prompt: the answers, the others' turns), they write the turn, and in the last turn
        score each answer 1-10 (its judgement, as a model's would be)."""
        turn = self.schedule[position]
        role, name, final = turn.speaker, self.names[turn.speaker], self.plan.final(position)
        scores = tuple(Question(answer, f"Your score for {shown} ({LO}-{HI})", scale=(LO, HI))
                       for answer, shown in assistants(self.order)) if final else ()
        asking = Asking(seat.spec.name, name, name, f"round {turn.round}", stage,
                        (Question("text", "Your turn"), *scores), shown=self.prompt(position))

        def content(given: Mapping[str, str]) -> tuple[str, Optional[str]]:
            scored = self.scored(given)
            if not final or not scored:
                return given.get("text", ""), None
            return given.get("text", ""), preference(scored) if self.order != "panel" else f"{scored['a']:g}"

        person = await self.ctx.person_turn(seat, asking, role=role, stage=stage, round=turn.round, content=content)
        if final and person.said is not None:
            self.person_judged(position, person.said, self.scored(person.values))
        return person

    def scored(self, given: Mapping[str, str]) -> dict[str, float]:
        """A person's scores of the answers (none: the turn was skipped)."""
        return {answer: float(given[answer]) for answer, _ in assistants(self.order) if answer in given}

    def person_judged(self, position: int, said: Message, scored: Mapping[str, float]) -> None:
        """The judgement of a person's last turn: recorded now, or found in the log (a continued unit)."""
        judgement = next((e for e in self.ctx.events if isinstance(e, Judgement) and e.turn == said.turn), None)
        if judgement is None:
            turn = self.schedule[position]
            base = {"turn": said.turn, "speaker": said.speaker, "role": turn.speaker, "order": self.order}
            judgement = self.judgement(base, scored, None if scored else "the turn was skipped", "human", said.content)
            self.ctx.record(judgement)
        if not judgement.parsed:
            self.dropped.add(position)
        self.judgements[position] = judgement

    def method(self, role: str) -> str:
        """How its scores are read; `auto` on a base model: likelihood (it writes no score lines)."""
        if self.s.choice == "auto" and self.in_document(role):
            return "likelihood"
        return choice_method(self.s.choice, self.ctx.model(role).spec, "text")

    # --- chat form (the paper's prompts) ---
    def prompt(self, position: int) -> str:
        turn = self.schedule[position]
        if turn.summary:
            return self.summary_prompt(position)
        history = "\n".join(render(self.templates["history_line"], {"speaker": self.speaker(p), "content": inset(self.said[p])})
                            for p in self.seen(position))
        final = self.suffix("final") if self.plan.final(position) else ""
        return render(self.suffix("prompt"), {**self.fields, "history": history, "persona": self.personas[turn.speaker],
                                              "name": self.names[turn.speaker], "final": final})

    def summary_prompt(self, position: int) -> str:
        """The code's per-referee summary: everything the referee has seen (new lines) and its
        previous summary."""
        seen = self.seen(position)
        lines = "".join(render(self.templates["summary_line"], {"speaker": self.speaker(p), "content": inset(self.said[p])})
                        + "\n" for p in seen)
        previous = next((self.said[p] for p in reversed(seen) if self.schedule[p].summary), "")
        return render(self.templates["summary"], {"summary": inset(previous), "new_lines": lines})

    def speaker(self, position: int) -> str:
        return self.names[self.schedule[position].speaker]

    # --- document form (a base model) ---
    def document(self, position: int) -> str:
        """The transcript up to this turn, as its strategy shows it, ending with its direction."""
        header = "document_header" + ("_scores" if self.s.task == "scores" else "")
        paragraphs = [render(self.templates[header], self.fields), render(self.suffix("document_item"), self.fields)]
        current = 0
        for p in self.seen(position):
            turn = self.schedule[p]
            if turn.summary:
                paragraphs.append(f"{self.summary_line(turn)} {' '.join(self.said[p].split())}")
                continue
            if turn.round != current:
                current = turn.round
                paragraphs.append(self.direction(current))
            paragraphs.append(f"{self.speaker(p)}: {' '.join(self.said[p].split())}")
        turn = self.schedule[position]
        if not turn.summary and turn.round != current:
            paragraphs.append(self.direction(turn.round))
        return "\n\n".join(paragraphs)

    def direction(self, round_: int) -> str:
        key = "document_final" if round_ == self.s.turns else "document_round"
        return render(self.templates[key], {**self.fields, "round": round_})

    def summary_line(self, turn: Turn) -> str:
        return render(self.templates["document_summary"], {"name": self.names[turn.referee]})

    def continuation(self, document: str, turn: Turn) -> Continue:
        names = [self.names[r] for r in self.plan.referees] + [self.names[SUMMARIZER]]
        stops = ("\n\n", "[", *(f"\n{n}" for n in names), *(f"{n}:" for n in names))
        prefix = self.summary_line(turn) if turn.summary else f"{self.names[turn.speaker]}:"
        return Continue(document=True, prefix=prefix, stop=stops, min_tokens=MIN_TOKENS,
                        ban_first=(*names, *OPENERS), no_repeat_ngram=NO_REPEAT, reference=document)

    # --- the last turn's scores ---
    async def judge(self, position: int, messages: list[LLMMessage], reply: Reply, document: Optional[str]) -> None:
        turn = self.schedule[position]
        role, method = turn.speaker, self.method(turn.speaker)
        base = {"turn": message_turn(self.ctx, reply), "speaker": self.names[role], "role": role, "order": self.order}
        if method == "text":
            scores, error = read_scores(reply.text, self.order)
            judgement = self.judgement(base, scores, error, "text", reply.text)
            if not recorded(self.ctx, judgement.turn):
                self.ctx.record(judgement)
        else:
            asked = [await self.score(role, messages, reply, document, name, method) for _, name in
                     assistants(self.order)]
            scores = {answer: r.score for (answer, _), r in zip(assistants(self.order), asked) if r.score is not None}
            error = None if len(scores) == len(asked) else "a score could not be read from the answer"
            how = asked[0].method if asked[0].call.detail else method  # a fallback says so in its detail
            judgement = self.judgement(base, scores, error, how, reply.text)
            judgement = judgement.model_copy(update={"distributions": {
                answer: r.probabilities for (answer, _), r in zip(assistants(self.order), asked) if r.measured}})
            self.ctx.record_replies(asked, *([] if recorded(self.ctx, judgement.turn) else [judgement]))
        if not judgement.parsed:
            self.dropped.add(position)
        self.judgements[position] = judgement

    @staticmethod
    def judgement(base: dict[str, Any], scores: Mapping[str, float], error: Optional[str], method: str, raw: str) -> Judgement:
        parsed = error is None
        return Judgement(**base, scores=dict(scores) if parsed else {}, parsed=parsed, error=error, method=method,
                         raw=None if parsed else raw,
                         preference=preference(scores) if parsed and base["order"] != "panel" else None)

    async def score(self, role: str, messages: list[LLMMessage], reply: Reply, document: Optional[str],
                    assistant: str, method: str) -> Reply:
        """One assistant's score asked after the referee's reply (see `choice`)."""
        name = self.names[role]
        if document is not None:
            asked: list[LLMMessage] = [UserMessage(content=f"{document}\n\n{name}: {' '.join(reply.text.split())}",
                                                   source="user")]
            prefix = render(self.templates["document_score"], {"name": name, "assistant": assistant})
            request = Score(document=True, lo=LO, hi=HI, prefix=prefix, sep=" ")
        else:
            question = render(self.templates["score_question"], {"assistant": assistant})
            asked = [*messages, AssistantMessage(content=reply.text, source=role),
                     UserMessage(content=question, source="user")]
            request = Score(lo=LO, hi=HI)
        stage = f"{self.order} score"
        if method == "structured":
            return await self.ctx.call(role, asked, answer_model(request), stage=stage, record=False)
        return await self.ctx.call(role, asked, request=request, stage=stage, record=False)

    def cancel(self) -> None:
        cancel_calls(self.calls.values())


def message_turn(ctx: UnitContext, reply: Reply) -> int:
    """The turn of the message a recorded reply gave: ctx.call appends a call and its message
    together (a continued unit's are in its log already)."""
    events = ctx.events
    at = next(i for i, e in enumerate(events) if e is reply.call)
    message = events[at + 1] if at + 1 < len(events) else None
    if not isinstance(message, Message):
        raise RuntimeError("a referee's call was recorded without its message")
    return message.turn


def recorded(ctx: UnitContext, turn: int) -> bool:
    """Whether the judgement of `turn` is in the log already (a unit continued after a stop)."""
    return any(isinstance(e, Judgement) and e.turn == turn for e in ctx.events)


async def run(s: ChatEvalScenario, ctx: UnitContext) -> Outcome:
    """One item: the panel in each order (pairwise) or once (scores), then the aggregation."""
    needed = ("question", "response_a", "response_b") if s.task == "pairwise" else ("question", "response_a")
    missing = [k for k in needed if not ctx.inputs.get(k)]
    if missing:
        raise ValueError(f"task {s.task} needs {', '.join(missing)}")
    plan = s.plan()
    judgements: list[Judgement] = []
    for order in ORDERS[s.positions] if s.task == "pairwise" else ("panel",):
        panel = _Panel(s, ctx, order)
        speakers = dict.fromkeys(plan.order())
        try:
            await ctx.group_chat([panel.agent(role) for role in speakers],
                                 lambda thread: next_speaker(plan, [m.source for m in thread]),
                                 str(ctx.inputs["question"]), len(plan.order()))
        finally:
            panel.cancel()
        judgements += [panel.judgements[p] for p in sorted(panel.judgements)]
    return aggregate(judgements, s.task)
