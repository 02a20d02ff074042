"""ChatEval (Chan et al. 2023, "ChatEval: Towards Better LLM-based Evaluators through Multi-Agent
Debate"): a panel of referees with distinct personas discusses the answers of AI assistants to a
question, then scores them from 1 to 10; as thunlp/ChatEval's code ran the paper's experiments
(commit 3bb65ab).

- `task: pairwise` (the paper's FairEval setting): two answers, A and B. Each referee speaks once
  per turn for `turns` turns, in the scenario's communication strategy (speaker_selection.chateval:
  one by one, simultaneous talk, simultaneous talk with a summarizer); in the last turn each
  gives both assistants a score. As the code does against position bias, the panel runs twice
  (`positions: both`): A shown as Assistant 1, then B. The preference is the code's aggregation:
  the sum of each answer's scores over every referee and order; equal sums are a tie.
- `task: scores` (moot's form of the paper's direct scoring): one answer, one score per referee;
  the item's score is their mean. Nothing is predicted: there is no label.

A referee's scores are recorded as a `judgement` event with its last message. Read from the
reply as the paper asks for them (`choice: text`: the reply's last lines `The score of Assistant
1: N` and `... 2: N`), or asked after the reply (`likelihood`: the expected score under the
model's probabilities of 1..10; `structured`: `{"answer": N}`). A reply whose scores cannot be
read is recorded as unparsed, and any unparsed judgement makes the item `unparsed` (the code
counts such an item as a tie). On a base model (the embedded one) the referees continue one
transcript document per order instead of the chat prompts (agents/prompts/chateval.yaml).
`moot report` shows accuracy and Cohen's kappa against the human labels (ChatEval Table 1).
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Annotated, Any, Callable, Literal, Mapping, Optional, Sequence

from autogen_agentchat.messages import BaseChatMessage
from autogen_core.models import AssistantMessage, LLMMessage, UserMessage
from pydantic import Field, model_validator

from moot.agents.prompts import inset, render
from moot.contract.protocol import InputField, Outcome, Protocol
from moot.contract.report import Reporting, TableCells
from moot.contract.vary import GENERIC, Data, VaryKey, set_path
from moot.kit import (
    Asking, Backends, Badge, ChoiceSetting, Companion, Continue, EventBase, EventType, Generation, Grade, Json, Message,
    PersonTurn, Place, Question, Reply, Retry, Score, Seat, StageAgent, Strict, Transcript, TurnText, UNPARSED,
    UnitContext, UnitView, Unreadable, answer_model, cancel_calls, check_models, check_prompts, choice_method,
    fail, spoken_of,
)
from moot.kit import cohen_kappa as kappa_of_labels
from moot.protocols.items.schema import MAX_UNPARSED, ItemScenario, MaxUnparsed, check_distinct
from moot.speaker_selection.chateval import STRATEGIES, SUMMARIZER, PanelPlan, Strategy, Turn, next_speaker

if TYPE_CHECKING:
    from moot.report.runs import Run

NAME = "chateval"
LO, HI = 1, 10  # the paper's scale
LABELS = ("a", "b", "tie")
Order = Literal["ab", "ba", "panel"]  # which answer is Assistant 1 (pairwise); `panel`: task scores
ORDERS: dict[str, tuple[Order, ...]] = {"both": ("ab", "ba"), "given": ("ab",), "swapped": ("ba",)}
FIELDS = frozenset({"question", "response_1", "response_2", "response", "history", "persona", "name", "final",
                    "summary", "new_lines", "speaker", "content", "assistant", "count", "cast", "turns", "round"})
MIN_TOKENS = 20  # a base model's line: as the conference's document measured (shorter turns said nothing)
NO_REPEAT = 7  # ... and never 7 words in a row copied from the document
OPENERS = ("(", '"', "[", "*", "'")


# --- the scenario --------------------------------------------------------------------------------
class Referee(Strict):
    """One referee of the panel."""

    name: Annotated[str, Field(pattern=r"^[^\n:\[\]]{1,40}$")]
    """How the referee is called in the discussion (`[General Public]: ...`)."""
    persona: str
    """Its role description, put in its prompt as the code does (`You are now Critic, one of the referees ...`)."""
    describe: Optional[str] = None
    """A base model's cast line, a noun phrase (`Critic is a critic who ...`); null: not described."""


class ChatEvalInputs(Strict):
    """One item given in the file (`--input question=...` and the others override it)."""

    question: Optional[str] = None
    response_a: Optional[str] = None
    response_b: Optional[str] = None


# The code's first two referees, verbatim (role_description of their agents in the config of the
# prompt's source, agents/prompts/chateval.yaml); `describe` is moot's, for a base model.
GENERAL_PUBLIC = {
    "name": "General Public",
    "persona": "You are now General Public, one of the referees in this task. You are interested in the story and "
               "looking for updates on the investigation. Please think critically by yourself and note that it's "
               "your responsibility to choose one of which is the better first.",
    "describe": "a member of the general public who thinks critically for themselves"}
CRITIC = {
    "name": "Critic",
    "persona": "You are now Critic, one of the referees in this task. You will check fluent writing, clear "
               "sentences, and good wording in summary writing. Your job is to question others judgement to make "
               "sure their judgement is well-considered and offer an alternative solution if two responses are at "
               "the same level.",
    "describe": "a critic who checks for fluent writing, clear sentences and good wording, and questions the "
                "others' judgement"}


class ChatEvalScenario(ItemScenario):
    """ChatEval: a referee panel discusses answers to a question and scores them."""

    PROTOCOL = NAME
    PLACEHOLDERS = FIELDS

    protocol: Literal["chateval"]
    title: str = "ChatEval"
    """Shown in transcripts and reports."""
    input: ChatEvalInputs = ChatEvalInputs()
    task: Literal["pairwise", "scores"] = "pairwise"
    """`pairwise`: which of two answers is better (a, b or tie; the paper's FairEval task); `scores`:
    one answer (`response_a`) scored 1-10, no label."""
    max_unparsed: MaxUnparsed = MAX_UNPARSED
    referees: Annotated[list[Referee], Field(min_length=1, max_length=8)] = Field(
        default=[GENERAL_PUBLIC, CRITIC], validate_default=True)
    """The panel in speaking order (the paper's main results: General Public and Critic)."""
    strategy: Strategy = "one_by_one"
    """How the referees talk: `one_by_one`, `simultaneous` (simultaneous talk), or
    `simultaneous_summarizer` (with a summarizer), as speaker_selection.chateval describes."""
    turns: Annotated[int, Field(ge=1, le=10)] = 2
    """How many times every referee speaks; the last turn gives the scores (the paper: 2)."""
    positions: Literal["both", "given", "swapped"] = "both"
    """Pairwise: `both` runs the panel with A as Assistant 1, then with B, and sums the scores of
    both (the code, against position bias); `given` / `swapped`: one order only."""
    choice: ChoiceSetting = "auto"
    """How a referee's scores are read: `text` (its last lines, as the paper asks), `likelihood`
    (each score asked after the reply, read as the expected score under the model's probabilities;
    a backend without them answers `structured`), `structured` (`{"answer": N}`); `auto`:
    likelihood on the embedded model, else text."""
    models: dict[str, str] = {"default": "local"}
    """Which model plays whom. Keys: `default`, `referees` (every referee), `referee_1` ...
    `referee_N`, `summarizer`."""
    generation: Generation = Generation(temperature=0.0, max_tokens=512)
    """The code's settings: temperature 0, 512 tokens."""
    retry: Retry = Retry()
    backends: Backends = Backends()
    prompts: dict[str, str] = {}

    @model_validator(mode="after")
    def _consistent(self) -> "ChatEvalScenario":
        names = [r.name for r in self.referees]
        check_distinct([n.lower() for n in names], "referees")
        if "summarizer" in {n.lower() for n in names}:
            raise fail("'Summarizer' is the summarizer's name", "referees")
        check_models(self.models, ("default", "referees", *self.roles()))
        check_prompts(self.prompts, NAME, FIELDS)
        if self.strategy == "simultaneous_summarizer" and self.turns < 2:
            raise fail("simultaneous_summarizer needs turns >= 2: a summary is written before each turn after "
                       "the first", "turns")
        if self.task == "scores" and self.positions != "given":
            raise fail("task scores has one answer: set positions: given", "positions")
        return self

    @property
    def labels(self) -> list[str]:
        """The predictions a pairwise item may have (`tie`: equal summed scores); none for scores."""
        return list(LABELS) if self.task == "pairwise" else []

    def label_set(self) -> list[str]:
        return self.labels

    def roles(self) -> list[str]:
        found = [f"referee_{i}" for i in range(1, len(self.referees) + 1)]
        return found + ([SUMMARIZER] if self.strategy == "simultaneous_summarizer" else [])

    def model_keys(self, role: str) -> tuple[str, ...]:
        """models[referee_i] > models['referees'] > models['default'] > local."""
        return (role,) if role == SUMMARIZER else (role, "referees")

    def headline_metric(self) -> str:
        return "accuracy"

    def plan(self) -> PanelPlan:
        return PanelPlan(tuple(self.roles()[:len(self.referees)]), self.turns, self.strategy)

    def names(self) -> dict[str, str]:
        """Role -> name in the discussion."""
        return {**{f"referee_{i}": r.name for i, r in enumerate(self.referees, 1)}, SUMMARIZER: "Summarizer"}


# --- the judgement event -------------------------------------------------------------------------
class Judgement(EventBase):
    """A referee's scores in the last turn, by answer (`a`, `b`), with the turn that gave them."""

    type: Literal["judgement"] = "judgement"
    turn: int
    speaker: str
    role: str
    order: Order
    scores: dict[str, float] = {}  # by answer: {"a": 8, "b": 7}; task scores: {"a": 7}
    preference: Optional[str] = None  # pairwise: a | b | tie by its own scores; None: unparsed, or task scores
    parsed: bool = True
    raw: Optional[str] = None  # the reply, kept when unparsed
    error: Optional[str] = None
    method: str = "text"  # text | likelihood | top_logprobs | scripted (measured) | structured
    distributions: dict[str, dict[str, float]] = {}  # measured: per answer, each score's probability


def assistants(order: str) -> list[tuple[str, str]]:
    """(answer, what the prompt calls it) in the order shown."""
    if order == "panel":
        return [("a", "the assistant")]
    first, second = ("a", "b") if order == "ab" else ("b", "a")
    return [(first, "Assistant 1"), (second, "Assistant 2")]


def preference(scores: Mapping[str, float]) -> str:
    return "a" if scores["a"] > scores["b"] else "b" if scores["b"] > scores["a"] else "tie"


def read_scores(text: str, order: str) -> tuple[dict[str, float], Optional[str]]:
    """The scores the reply's last lines give (`The score of Assistant 1: 8`, then `... 2: 7`; the
    code's format), by answer; ({}, why) when they cannot be read. Markdown emphasis and `/10` or
    `out of 10` after the number are allowed; a score outside 1..10 is not."""
    shown = assistants(order)
    lines = [line for line in text.splitlines() if line.strip()][-len(shown):]
    wanted = " and ".join(f"'The score of {name}: N'" for _, name in shown)
    if len(lines) < len(shown):
        return {}, f"the reply does not end with {wanted}"
    scores = {}
    for line, (answer, name) in zip(lines, shown):
        found = re.fullmatch(rf"[*_\s]*The score of {name}[*_\s]*:[*_\s]*(\d+(?:\.\d+)?)\s*(?:/\s*{HI}|out of {HI})?"
                             r"[*_.\s]*", line, re.I)
        if found is None:
            return {}, f"the reply does not end with {wanted}"
        value = float(found.group(1))
        if not LO <= value <= HI:
            return {}, f"the score of {name} is {found.group(1)}, outside {LO}-{HI}"
        scores[answer] = value
    return scores, None


def decide(order: str) -> Callable[[str], str]:
    """A referee's last reply as its message's decision: its preference, or `unparsed`."""
    def reading(text: str) -> str:
        scores, _ = read_scores(text, order)
        return (preference(scores) if order != "panel" else f"{scores['a']:g}") if scores else UNPARSED
    return reading


def summed(judgements: Sequence[Judgement]) -> dict[str, float]:
    return {answer: sum(j.scores[answer] for j in judgements) for answer in ("a", "b")}


def aggregate(judgements: Sequence[Judgement], task: str) -> Outcome:
    """The item's result from every referee's judgement in every order (the module docstring)."""
    unread = [j for j in judgements if not j.parsed]
    if unread:
        who = ", ".join(f"{j.speaker} ({j.order})" for j in unread)
        return Outcome(UNPARSED if task == "pairwise" else None,
                       f"{len(unread)} of {len(judgements)} judgements unreadable: {who}",
                       decided_by="unparsed", summary={"unread": len(unread)})
    if task == "scores":
        mean = sum(j.scores["a"] for j in judgements) / len(judgements)
        return Outcome(None, f"mean of {len(judgements)} referees' scores: {mean:.2f}", decided_by="mean",
                       summary={"score": round(mean, 4), "unread": 0})
    sums = summed(judgements)
    label = preference(sums)
    orders = {order: preference(summed([j for j in judgements if j.order == order]))
              for order in dict.fromkeys(j.order for j in judgements)}
    referees = len({j.role for j in judgements})
    explanation = (f"sums over {referees} referee(s) x {len(orders)} order(s): a {sums['a']:g}, b {sums['b']:g}"
                   + (" (equal: tie)" if label == "tie" else ""))
    return Outcome(label, explanation, decided_by="sum_of_scores",
                   summary={"sums": sums, "orders": orders, "unread": 0})


# --- one panel: one order of the answers ---------------------------------------------------------
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


# --- how a unit reads ----------------------------------------------------------------------------
ORDER_TITLES = {"ab": "Answer A as Assistant 1, answer B as Assistant 2",
                "ba": "Answer B as Assistant 1, answer A as Assistant 2 (swapped)", "panel": "The panel"}


def judgement_text(j: Judgement) -> str:
    """`scores: a 8, b 7 -> a` (a terminal line)."""
    if not j.parsed:
        return f"scores of {j.speaker}: UNPARSED — {j.error}"
    how = f" ({j.method})" if j.method != "text" else ""
    scores = ", ".join(f"{answer} {value:g}" for answer, value in sorted(j.scores.items()))
    return f"scores of {j.speaker}{how}: {scores}" + (f" -> {j.preference}" if j.preference else "")


INPUT_LABELS = {"question": "Question", "response_a": "Answer A", "response_b": "Answer B"}
TASK_WORDS = {"pairwise": "Which of the two answers is better: A, B, or a tie (pairwise)",
              "scores": "How good the answer is: a score from each referee (scores)"}


class ChatEvalView(UnitView):
    """A section per order of the answers with its turns; each referee's scores under its last turn."""

    def input_label(self, name: str) -> str:
        return INPUT_LABELS.get(name, name)

    def brief(self) -> list[tuple[str, str]]:
        """The task in words (the scenario's `task` names a setting, not a question)."""
        task = str(self.scenario.get("task") or "pairwise")
        return [("Task", TASK_WORDS.get(task, task))]

    def section(self, action: str, part: Optional[int]) -> Place:
        order = action.split(" ")[0].split(":")[0]
        return Place(f"order:{order}", ORDER_TITLES.get(order, order), rounds=True)

    def turn(self, message: Message) -> TurnText:
        order, _, referee = message.action.partition(":")
        whom = f"for {self.names().get(referee, referee)}" if referee else ""
        step = f"summary {whom}" if whom else "final judgement" if message.round == self.scenario.get("turns") \
            else "discussion"
        return TurnText(f"{order.upper()} T{message.round}", step, message.content.strip(), action=whom)

    def companion(self, event: EventBase) -> Optional[Companion]:
        if not isinstance(event, Judgement):
            return None
        line = judgement_text(event)
        if not event.parsed:
            return Companion(event.turn, line, Unreadable("Scores", event.speaker, event.error or "", "judgement",
                                                          event.raw))
        if event.order == "panel":
            return Companion(event.turn, line, Grade("Score of the answer", event.speaker, f"{event.scores['a']:g}",
                                                     HI, how=event.method))
        detail = ", ".join(f"answer {answer}: {value:g}" for answer, value in sorted(event.scores.items()))
        tags = (event.method,) if event.method != "text" else ()
        return Companion(event.turn, line, Badge("Prefers", event.preference or "", detail, "judgement", tags))

    def names(self) -> dict[str, str]:
        referees = self.scenario.get("referees")
        found = {f"referee_{i}": str(r.get("name")) for i, r in
                 enumerate(referees if isinstance(referees, list) else [], 1) if isinstance(r, dict)}
        return {**found, SUMMARIZER: "Summarizer"}

    def speakers(self, roles: Sequence[str]) -> list[tuple[str, str]]:
        names = self.names()
        return [(role, names.get(role, role)) for role in roles]

    def summary(self, events: Sequence[EventBase]) -> list[str]:
        found = [e for e in events if isinstance(e, Judgement)]
        if not found:
            return []
        return [f"judgements: {sum(j.parsed for j in found)} of {len(found)} readable"]

    def ending(self, transcript: Transcript) -> list[str]:
        if transcript.outcome is not None:
            return super().ending(transcript)
        found = transcript.of_type(Judgement)
        return [judgement_text(j) for j in found]

    def row(self, row: Mapping[str, Json]) -> str:
        score = row.get("score")
        return f"{row.get('id')}: {row.get('status')}" + (f" (score {score})" if score is not None else "")


# --- in a report: ChatEval Table 1 ---------------------------------------------------------------
TABLE = ("Pairwise preference against human labels (cf. ChatEval Table 1): accuracy and Cohen's kappa; an "
         "unparsed prediction counts as wrong and as a category of its own")


def cohen_kappa(gold: Sequence[str], pred: Sequence[Optional[str]]) -> float:
    """Unweighted Cohen's kappa between two labelings (sklearn's `cohen_kappa_score(gold, pred)`:
    the categories are every label either side uses, `unparsed` one of them); nan when undefined."""
    if len(gold) != len(pred) or not gold:
        raise ValueError("kappa needs two labelings of the same items, at least one")
    return kappa_of_labels(gold, [p if p is not None else UNPARSED for p in pred])


def variant(meta: Mapping[str, object]) -> str:
    """A run's row name: `ChatEval one_by_one, 2 referees x 2 turns, both orders`."""
    s = meta.get("scenario")
    s = s if isinstance(s, dict) else {}
    referees = s.get("referees")
    count = len(referees) if isinstance(referees, list) else "?"
    return f"ChatEval {s.get('strategy', '?')}, {count} referees x {s.get('turns', '?')} turns, " \
           f"{s.get('positions', '?')} order(s)"


def table_cells(run: Run) -> list[TableCells]:
    gold = [str(r["gold"]) for r in run.scored]
    pred = [r.get("prediction") for r in run.scored]
    accuracy = f"{run.dataset} (accuracy)"
    return [TableCells("chateval", "chateval", TABLE, {accuracy: run.report().accuracy,
                                                        f"{run.dataset} (kappa)": cohen_kappa(gold, pred)},
                       intervals={accuracy: run.interval("accuracy")})]


# --- the protocol ---------------------------------------------------------------------------------
def _strategy(data: Data, value: object) -> Data:
    if value not in STRATEGIES:
        raise ValueError(f"a strategy is one of {', '.join(STRATEGIES)}")
    return set_path(data, "strategy", value)


def _turns(data: Data, value: object) -> Data:
    try:
        return set_path(data, "turns", int(str(value)))
    except ValueError:
        raise ValueError("turns is a whole number") from None


PROTOCOL = Protocol(
    name=NAME,
    title="ChatEval: a referee panel's multi-agent debate",
    paper="Chan et al. 2023, ChatEval: Towards Better LLM-based Evaluators through Multi-Agent Debate",
    scenario=ChatEvalScenario,
    policy=next_speaker,
    run=run,
    inputs=(InputField("question", "question", help="the user's question (or dialogue context) the answers reply to"),
            InputField("response_a", "response_a", help="answer A (task scores: the answer scored)"),
            InputField("response_b", "response_b", required=False, help="answer B (task pairwise)")),
    result_name="preference",
    example=NAME,
    events=(EventType(Judgement),),
    view=ChatEvalView,
    vary=(*GENERIC, VaryKey("strategy", "the communication strategy", _strategy),
          VaryKey("turns", "how many turns the referees talk", _turns)),
    report=Reporting(variant=variant, tables=table_cells),
    seats=lambda s: {**{r: (r,) for r in s.roles() if r != SUMMARIZER},
                     "referees": tuple(r for r in s.roles() if r != SUMMARIZER)},
)
