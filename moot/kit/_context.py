"""What a protocol sees while it runs one unit: its input, its models, and the unit's event log.

`await ctx.call(role, messages, output)` asks the role's model through the run's ModelEngine
(cache, concurrency bound, retries) and records a `call` event (exactly what was sent and what
came back) and the `message` it contributes, in one append. A conference records its own turn
events around the call (`record=False`, then `ctx.record(...)`).

A call may carry a request (moot.models.requests): a continuation of a document, a closed choice
or a score read from the model's probabilities. Its `call` event says which (`kind`) and what was
measured (`detail`). A backend that cannot measure a choice or score (no log-probabilities, or a
server that refuses them) is asked for structured output instead (`{"answer": ...}`), and the
call records that (`detail.method`: structured, with the reason); a continuation it cannot do is
asked as a plain chat reply. `Reply.option` / `Reply.score` read either kind of answer. Each call also carries the answer form
its protocol declared for its stage (`expected`, moot.models.expect), which only the scripted
model reads.

A unit that was cut short and runs again continues its log: its recorded calls are served back
from the log (not sent, not recorded twice) as the protocol asks them again, so the log stays
append-only with no event repeated, and no finished call is sent twice even without a cache. A
call is served back to the same stage that recorded it: the same prompt asked elsewhere (another
negotiation's twin, in whatever order concurrent stages run) is its own call.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Literal, Mapping, Optional, Protocol, Sequence, TypeVar

from autogen_agentchat.messages import BaseChatMessage
from autogen_core import CancellationToken
from autogen_core.models import LLMMessage
from pydantic import BaseModel

from moot.kit.seats import Answered, Asking, PersonTurn, Seat, proxied
from moot.kit._stage import GroupChats, Select, StageAgent
from moot.log.events import MEASURED, Call, CallDetail, EventBase, Human, Measured, Message, Usage
from moot.models.cache import cache_key, message_data
from moot.models.calls import ModelCallError
from moot.models.engine import ModelEngine, RoleModel
from moot.models.expect import Expected, for_stage
from moot.models.requests import Continue, NotSupported, Request, RequestKind, answer_model
from moot.log.transcript import EventLog, Transcript
from moot.models.replies import json_object
from moot.scenario.blocks import ScenarioBase
from moot.tracing import current, under

OnText = Callable[[str], None]
T = TypeVar("T")


@dataclass(frozen=True)
class Speaking:
    """A turn about to be asked of a model (for a live display): who speaks, what for, and where:
    `where` as its protocol tags a turn (`T1 R2`), `part` and `round` as its message will say."""

    unit: str
    speaker: str
    label: str  # what the speaker is called in the conversation
    action: str
    where: str
    part: Optional[int]
    round: int


class Listener(Protocol):
    """What shows a unit as it runs (moot.api.console): events as they are recorded, and a turn as it
    starts (returning where the turn's text goes as it is generated, or None)."""

    def __call__(self, events: list[EventBase]) -> None: ...

    def speaking(self, turn: Speaking) -> Optional[OnText]: ...


@dataclass(frozen=True)
class Recording:
    """How a call is recorded: the `message` it contributes (unless `record` is False)."""

    stage: str
    round: int
    decide: Optional[Callable[[str], Optional[str]]]
    record: bool
    speaker: Optional[str]


@dataclass(frozen=True)
class Unit:
    """One thing a run does: a conference (with its variant), or one item of a protocol."""

    id: str
    scenario: ScenarioBase
    inputs: Mapping[str, Any] = field(default_factory=dict)
    gold: Optional[str] = None
    variant: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """A model's reply as a protocol sees it; `call` is its event (recorded unless record=False)."""

    text: str
    cached: bool
    call: Call
    replayed: bool = False  # served from this unit's own log (a continued unit)

    @property
    def method(self) -> str:
        """How a closed answer was read: likelihood, top_logprobs, scripted, structured, or text."""
        return self.call.detail.method if self.call.detail and self.call.detail.method else "text"

    @property
    def measured(self) -> bool:
        return self.method in MEASURED

    @property
    def probabilities(self) -> dict[str, float]:
        detail = self.call.detail
        return dict(detail.probabilities) if detail is not None and self.measured else {}

    @property
    def option(self) -> Optional[str]:
        """A choice's option: the most likely one, or the structured answer (None if unreadable)."""
        if self.measured:
            return self.text
        data = json_object(self.text)
        answer = data.get("answer") if data else None
        return str(answer) if answer is not None else None

    @property
    def score(self) -> Optional[float]:
        """A score: its expectation under the model's probabilities, or the structured answer."""
        if self.measured and self.call.detail is not None:
            return self.call.detail.expected
        option = self.option
        return float(option) if option is not None and option.lstrip("-").isdigit() else None


class UnitContext:
    """One unit's access to its models and its log (see the module docstring)."""

    def __init__(self, unit: Unit, engine: ModelEngine, models: Mapping[str, RoleModel], log: EventLog,
                 prior: Optional[Transcript] = None, listener: Optional[Listener] = None,
                 chats: Optional[GroupChats] = None, seats: Optional[Mapping[str, Seat]] = None,
                 expected: Optional[Mapping[str, Expected]] = None):
        self.unit, self.engine, self.models, self.log = unit, engine, models, log
        self.expected = dict(expected or {})  # stage -> the answer form its protocol declared (scripted)
        self.seats = dict(seats or {})  # agent -> the seat a person takes in its place
        self.chats = chats or GroupChats()
        self.prior = prior
        self.listener = listener
        self.cancellation = CancellationToken()
        self.trace = current()  # the unit's span, its calls' parent (moot.tracing), while tracing is on
        self.events: list[EventBase] = list(prior.events) if prior else []
        self._replay: dict[tuple[str, str], list[Call]] = defaultdict(list)  # by (key, stage)
        for call in (prior.calls if prior else []):
            self._replay[call.key, call.stage].append(call)
        self._asking: set[asyncio.Future[Call]] = set()  # calls in flight
        self._answered: list[Call] = []  # calls answered, not recorded yet
        self._turn = max((m.turn for m in (prior.messages if prior else [])), default=0)

    @property
    def inputs(self) -> Mapping[str, Any]:
        return self.unit.inputs

    async def group_chat(self, agents: Sequence[StageAgent], select: Select, task: str,
                         max_turns: int) -> list[BaseChatMessage]:
        """A stage's AutoGen group chat: `agents` in the order `select` gives (see moot/kit/_stage.py)."""
        return await self.chats.run(agents, select, task, max_turns, self.cancellation)

    def model(self, role: str) -> RoleModel:
        return self.models[role]

    def seat(self, agent: str) -> Optional[Seat]:
        """The seat a person takes in `agent`'s place (`moot run --human`), if any."""
        return self.seats.get(agent)

    def speaking(self, speaker: str, label: str, action: str, where: str, part: Optional[int],
                 round: int) -> Optional[OnText]:
        """Tell the run's display that a turn starts (see Speaking). Returns where the turn's text
        goes as it is generated, or None when nobody shows it."""
        if self.listener is None:
            return None
        return self.listener.speaking(Speaking(self.unit.id, speaker, label, action, where, part, round))

    def answered_before(self, speaker: str, stage: str, round: int) -> Optional[Message]:
        """A person's turn this unit recorded before it was cut short (it is not asked again)."""
        prior = self.prior.messages if self.prior else []
        return next((m for m in prior if m.source == "human" and (m.speaker, m.action, m.round) == (speaker, stage, round)),
                    None)

    def stood_in_before(self, speaker: str, stage: str, round: int) -> bool:
        """Whether the seat's model took this turn before the unit was cut short (the person's time
        ran out): the person is not asked again; the model's calls are served from the log."""
        prior = self.prior.events if self.prior else []
        turns = {e.turn for e in prior if isinstance(e, Human) and e.speaker == speaker and e.fallback == "model"}
        return any(isinstance(m, Message) and m.turn in turns and (m.speaker, m.round) == (speaker, round)
                   and (m.action == stage or m.action.startswith(f"{stage}_")) for m in prior)

    def stood_in(self, answered: Answered) -> None:
        """Record that a seat's model took the person's turn (its time ran out): the `human`
        record, after the model's message (the latest of the seat's speaker), naming its turn."""
        speaker = answered.asking.speaker
        turn = next((e.turn for e in reversed(self.events) if isinstance(e, Message) and e.speaker == speaker), 0)
        self.record(answered.event(turn))

    def record_human(self, answered: Answered, *, role: str, stage: str, round: int, content: str,
                     decision: Optional[str] = None) -> Message:
        """Record a person's turn (its `human` record, then its message), numbered as the next turn."""
        self._turn += 1
        message = Message(turn=self._turn, speaker=answered.asking.speaker, role=role, action=stage, round=round,
                          content=content, latency_s=answered.seconds, calls=0, decision=decision, source="human")
        self.record(answered.event(self._turn), message)
        return message

    async def person_turn(self, seat: Seat, asking: Asking, *, role: str, stage: str, round: int,
                          content: Callable[[Mapping[str, str]], tuple[str, Optional[str]]]) -> PersonTurn:
        """A turn a person takes at `seat` in `asking.speaker`'s place: asked through the seat
        (moot.kit.seats.proxied), and recorded with its `human` record as `role`'s message
        (`content(answers)`: the message's text and decision; a skipped turn gives no answers);
        one recorded before the unit was cut short is not asked again (see PersonTurn)."""
        before = self.answered_before(asking.speaker, stage, round)
        if before is not None:
            return PersonTurn(before)
        if self.stood_in_before(asking.speaker, stage, round):
            return PersonTurn()
        answered = await proxied(seat, asking, self.cancellation)
        if answered.fallback == "model":
            return PersonTurn(stand_in=answered)
        text, decision = content(answered.values)
        return PersonTurn(self.record_human(answered, role=role, stage=stage, round=round, content=text,
                                            decision=decision), values=answered.values)

    async def person_or_model(self, seat: Optional[Seat], asking: Callable[[Seat], Asking],
                              model: Callable[[], Awaitable[T]], person: Callable[[Message], T], *, role: str,
                              stage: str, round: int,
                              content: Callable[[Mapping[str, str]], tuple[str, Optional[str]]]) -> T:
        """A turn of a seated agent (`seat`: the seat a person takes in its place, if any): the
        person's (`person(message)`, see person_turn), else the model's (`model()`), also when the
        seat's time ran out (then recorded as standing in)."""
        taken = await self.person_turn(seat, asking(seat), role=role, stage=stage, round=round,
                                       content=content) if seat is not None else None
        if taken is not None and taken.said is not None:
            return person(taken.said)
        found = await model()
        if taken is not None and taken.stand_in is not None:
            self.stood_in(taken.stand_in)
        return found

    def record(self, *events: EventBase) -> None:
        """Append events to the unit's log in one write, then show them."""
        self.log.append(*events)
        self.events.extend(events)
        self._answered = [c for c in self._answered if not any(c is e for e in events)]
        if self.listener is not None:
            self.listener(list(events))

    def record_replies(self, replies: Sequence[Reply], *events: EventBase) -> None:
        """Record the calls of replies asked with `record=False` (but those served from this
        unit's own log: they are in it already) together with the events they gave."""
        self.record(*[r.call for r in replies if not r.replayed], *events)

    async def call(self, role: str, messages: Sequence[LLMMessage], output: Optional[type[BaseModel]] = None, *,
                   request: Optional[Request] = None, stage: str = "", round: int = 1,
                   decide: Optional[Callable[[str], Optional[str]]] = None, record: bool = True,
                   speaker: Optional[str] = None, on_text: Optional[OnText] = None) -> Reply:
        """The reply of `role`'s model (to `request`, if given). Recorded as a `call` and a
        `message` (speaker, stage, round, the reply, `decide(reply)` as its decision) unless
        `record` is False. `on_text` gets the reply's text as it is generated (streaming models)."""
        recording = Recording(stage, round, decide, record, speaker)
        try:
            return await self._call(role, messages, output, request, recording, on_text)
        except NotSupported as exc:
            if request is None:
                raise
            fallback = answer_model(request) if not isinstance(request, Continue) else output
            how = "structured" if fallback is not None else "text"
            note = f"{request.kind} not available from this backend ({exc}); asked for {how} output"
            return await self._call(role, messages, fallback, None, recording, on_text, (request.kind, how, note))

    async def _call(self, role: str, messages: Sequence[LLMMessage], output: Optional[type[BaseModel]],
                    request: Optional[Request], recording: Recording, on_text: Optional[OnText],
                    asked: Optional[tuple[RequestKind, str, str]] = None) -> Reply:
        """One call; `asked`: (kind, method, note) of a request answered by a fallback."""
        model = self.models[role]
        key = cache_key(model.spec, model.settings, messages, output, request.as_dict() if request else None)
        if self._replay.get((key, recording.stage)):  # the same call at the same point, not its twin elsewhere
            call = self._replay[key, recording.stage].pop(0)
            return Reply(call.reply, call.cached, call, replayed=True)
        asking = asyncio.ensure_future(under(self.trace, self._answer(role, messages, output, request, key,
                                                                      recording.stage, on_text, asked)))
        self.cancellation.link_future(asking)  # a stopped run does not wait for a reply
        self._asking.add(asking)
        asking.add_done_callback(self._asking.discard)
        try:
            call = await asking
        except ModelCallError as exc:
            exc.role = role
            raise
        except asyncio.CancelledError:  # answered as the unit stopped: recorded with its message all the same
            if asking.done() and not asking.cancelled() and asking.exception() is None:
                self._recorded(asking.result(), recording)
            raise
        return self._recorded(call, recording)

    def _recorded(self, call: Call, recording: Recording) -> Reply:
        """The reply of an answered call, recorded with its message (unless recording.record is
        False). Never the call alone: a resumed unit serves a recorded call from the log and would
        never say its turn."""
        reply = Reply(call.reply, call.cached, call)
        if recording.record:
            self.record(call, self.message(reply, stage=recording.stage, round=recording.round,
                                           speaker=recording.speaker,
                                           decision=recording.decide(call.reply) if recording.decide else None))
        return reply

    async def _answer(self, role: str, messages: Sequence[LLMMessage], output: Optional[type[BaseModel]],
                      request: Optional[Request], key: str, stage: str, on_text: Optional[OnText],
                      asked: Optional[tuple[RequestKind, str, str]]) -> Call:
        """The `call` event of the model's answer, held as answered until it is recorded."""
        model = self.models[role]
        started = time.monotonic()
        result = await self.engine.ask(model, messages, output, request=request, role=role, key=key,
                                       cancellation_token=self.cancellation, on_text=on_text,
                                       expected=for_stage(self.expected, stage))
        kind: Literal["chat", RequestKind] = request.kind if request else "chat"
        detail = result.detail  # a chat reply's too: how the embedded model ran it
        if asked is not None:
            kind, detail = asked[0], {**(detail or {}), "method": asked[1], "note": asked[2]}
        call = Call(role=role, stage=stage, model=model.spec, messages=[message_data(m) for m in messages],
                    output=output.__name__ if output is not None else None, reply=result.text,
                    usage=Usage(prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens),
                    latency_s=round_s(result.latency_s if not result.cached else time.monotonic() - started),
                    attempts=result.attempts, cached=result.cached, finish_reason=result.finish_reason, key=key,
                    kind=kind, detail=CallDetail(**detail) if detail else None, cost_usd=result.cost_usd)
        self._answered.append(call)
        return call

    async def settle(self) -> None:
        """A unit that stops early (a failed call): its other calls in flight end, and every call
        answered but not recorded yet (one asked with record=False, a sibling of the failed one) is
        recorded, so the log holds every call paid for (its cost_usd sums to run.json's spend_usd)
        and a continued unit serves it back from there."""
        if self._asking:
            await asyncio.gather(*self._asking, return_exceptions=True)
        self.record_answered()

    def record_answered(self) -> None:
        """Record the calls answered but not recorded yet (see settle; a cancelled unit's calls in
        flight were cancelled and cost nothing)."""
        if self._answered:
            self.record(*self._answered)

    def message(self, reply: Reply, *, stage: str = "", round: int = 1, speaker: Optional[str] = None,
                decision: Optional[str] = None, content: Optional[str] = None,
                measured: Optional[Measured] = None, calls: int = 1) -> Message:
        """The message `reply` contributes (its text, or `content`), numbered as the unit's next turn;
        `calls`: how many calls it took (a closed answer and its calibration's)."""
        self._turn += 1
        call = reply.call
        return Message(turn=self._turn, speaker=speaker or call.role, role=call.role, action=stage or call.role,
                       round=round, content=reply.text if content is None else content, model=call.model,
                       usage=call.usage, latency_s=call.latency_s, calls=max(call.attempts, calls, 1),
                       decision=decision, measured=measured)


def round_s(seconds: float) -> float:
    return round(seconds, 4)
