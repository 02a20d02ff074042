"""People at a run's seats (`moot run --human SEAT`): what a person is asked, how an answer is
read, timed and recorded, and the AutoGen agent a person's turns go through.

A protocol declares its seats (Protocol.seats: seat name -> the agents it covers: an agent, a
role, a group such as `participants`). A seated agent is an AutoGen UserProxyAgent (`SeatProxy`)
in the same group chat and speaker selection as the models: its input function puts the turn's
questions to the seat. The seat asks its `Person` (the terminal, a script in tests, or whatever
calls `QueuedPerson.answer`: a browser page), reads a closed answer from the allowed ones (asking
again until one reads), asks to confirm an empty free turn, times the turn, and gives up at the
seat's time limit (its fallback then stands in: the seat's model, or a skipped turn). While it
waits, the seat's pending file in the run folder (`seats/SEAT.json`, moot.saved.seatfiles) says
what is asked. The seated agents a seat covers (`--human participants`) share one person, who is
asked one turn at a time.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import AsyncGenerator, Literal, Mapping, Optional, Protocol, Sequence

from autogen_agentchat.agents import UserProxyAgent
from autogen_agentchat.base import Response
from autogen_agentchat.messages import BaseAgentEvent, BaseChatMessage, TextMessage
from autogen_core import CancellationToken
from autogen_core.models import LLMMessage

from moot.errors import UsageError, nearest
from moot.saved.seatfiles import answer_file, pending_file, read_json, read_pending
from moot.log.events import Human, Message
from moot.log.jsonl import MAX_LINE
from moot.safety.diskio import write_atomic
from moot.safety.utf8 import undecodable

Fallback = Literal["wait", "model", "skip"]
FALLBACKS: tuple[Fallback, ...] = ("wait", "model", "skip")
YES, NO = "yes", "no"
# bytes of one typed answer: its event line (JSON escapes take up to 6 bytes a byte, and a later
# call's prompt may hold a few turns) stays far within what the transcript reader takes
MAX_TYPED = MAX_LINE // 32


@dataclass(frozen=True)
class SeatSpec:
    """`--human SEAT[:SECONDS[:FALLBACK]]`: a seat a person takes, its time limit per turn and
    what stands in when it runs out (`model`: the seat's model answers; `skip`: the turn is
    empty; `wait`: no limit)."""

    name: str
    limit_s: Optional[float] = None
    fallback: Fallback = "wait"

    @classmethod
    def parse(cls, text: str) -> "SeatSpec":
        name, _, rest = text.partition(":")
        seconds, _, fallback = rest.partition(":")
        if not name.strip():
            raise UsageError(f"--human {text!r}: name a seat (an agent, a role, or a group)")
        if not seconds:
            return cls(name.strip())
        try:
            limit = float(seconds)
        except ValueError:
            raise UsageError(f"--human {text!r}: the time limit must be seconds, got {seconds!r}") from None
        if not math.isfinite(limit) or limit <= 0:
            raise UsageError(f"--human {text!r}: the time limit must be a positive number of seconds")
        fallback = fallback or "model"
        if fallback not in FALLBACKS:
            raise UsageError(f"--human {text!r}: the fallback must be one of {', '.join(FALLBACKS)}"
                             f"{nearest(fallback, FALLBACKS)}")
        return cls(name.strip(), None if fallback == "wait" else limit, fallback)


def seated_agents(seats: Mapping[str, Sequence[str]], specs: Sequence[SeatSpec], protocol: str) -> dict[str, SeatSpec]:
    """Each seated agent's spec, from the seats a protocol declares for a scenario; a seat it does
    not declare is bad input naming the nearest ones."""
    chosen: dict[str, SeatSpec] = {}
    for spec in specs:
        if spec.name not in seats:
            near = nearest(spec.name, seats) or f" (seats: {', '.join(seats)})"
            raise UsageError(f"--human {spec.name!r}: no such seat in this {protocol} scenario{near}"
                             if seats else f"--human: a {protocol} has no seat for a person")
        for agent in seats[spec.name]:
            if agent in chosen:
                raise UsageError(f"--human {spec.name!r}: {agent} is seated already (--human {chosen[agent].name})")
            chosen[agent] = spec
    return chosen


@dataclass(frozen=True)
class Question:
    """One thing a person is asked: free text, a closed choice among `options`, or a whole score
    in `scale`. `key` names what the answer fills (a verdict, a criterion, a turn's text)."""

    key: str
    prompt: str
    options: tuple[str, ...] = ()
    scale: Optional[tuple[int, int]] = None
    lines: bool = True  # free text: several lines (a turn), or one (a name)
    required: bool = True  # free text: an empty answer is confirmed first; False: it may be empty (a reason)
    asked_if: Optional[tuple[str, str]] = None  # (key, answer): asked only when that question was so answered

    @property
    def kind(self) -> Literal["text", "choice", "score"]:
        return "choice" if self.options else "score" if self.scale else "text"

    def read(self, text: str) -> tuple[Optional[str], str]:
        """(the answer, "") or (None, why it does not read). A choice: an option (any case, `_`
        or space alike) or its number (ASCII digits); a score: a whole number in the scale; text:
        as typed. Any answer: UTF-8 and at most MAX_TYPED bytes, so its record always reads."""
        unfit = typed_problem(text)
        if unfit:
            return None, unfit
        answer = text.strip()
        if self.kind == "text":
            return text, ""
        if self.options:
            wanted = _folded(answer)
            if NUMBER.fullmatch(answer) and 1 <= int(answer) <= len(self.options):
                return self.options[int(answer) - 1], ""
            found = [o for o in self.options if _folded(o) == wanted]
            return (found[0], "") if found else (None, f"choose one of {', '.join(self.options)} (or its number)")
        low, high = self.scale or (1, 10)
        if SIGNED.fullmatch(answer) and low <= int(answer) <= high:
            return str(int(answer)), ""
        return None, f"a whole number from {low} to {high}"

    def as_dict(self) -> dict[str, object]:
        return {"key": self.key, "prompt": self.prompt, "kind": self.kind, "options": list(self.options),
                "scale": list(self.scale) if self.scale else None, "lines": self.lines, "required": self.required}


NUMBER = re.compile(r"[0-9]{1,9}")  # an option's number: ASCII digits, never thousands of them
SIGNED = re.compile(r"[+-]?[0-9]{1,9}")


def typed_problem(text: str) -> str:
    """Why typed `text` cannot be taken ("" when it can): bytes that are not UTF-8 (read as
    surrogates, as Python reads names), or more than MAX_TYPED bytes."""
    size = len(text.encode("utf-8", "surrogateescape"))
    if size > MAX_TYPED:
        return f"longer than {MAX_TYPED // 1024} KiB ({size} bytes); type a shorter answer"
    return "not UTF-8 text (check the terminal's encoding); type it again" if undecodable(text) else ""


def as_recorded(text: str) -> str:
    """What was typed, as the seat's record keeps it: an answer that cannot be taken is kept as
    what it was (bytes that are not UTF-8 as U+FFFD; one too long by its size), so the record reads."""
    size = len(text.encode("utf-8", "surrogateescape"))
    if size > MAX_TYPED:
        return f"(refused: {size} bytes)"
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _folded(text: str) -> str:
    return re.sub(r"[\s_-]+", " ", text).strip().casefold()


@dataclass(frozen=True)
class Asking:
    """A turn put to a person: whose seat, who speaks, where, and its questions in order."""

    seat: str
    speaker: str
    label: str  # what the speaker is called in the conversation
    where: str  # where the turn is, as its protocol says it (`T1 R2`)
    action: str
    questions: tuple[Question, ...]
    shown: str = ""  # what the seat's model would be shown, when the live transcript does not say it all


@dataclass(frozen=True)
class PersonTurn:
    """A turn a person's seat took (UnitContext.person_turn): `said`, their message (recorded now,
    with the answers it was made of, or before the unit was cut short); or `stand_in`, what they were asked when the seat's time
    ran out and its model answers (then `UnitContext.stood_in(stand_in)`); neither: the seat's
    model took the turn before the unit was cut short, and its calls are in the log."""

    said: Optional["Message"] = None
    stand_in: Optional["Answered"] = None
    values: Mapping[str, str] = field(default_factory=dict)  # the answers, when asked now

    @property
    def by_model(self) -> bool:
        return self.said is None


def shown_of(messages: Sequence[LLMMessage]) -> str:
    """What chat messages say, as a person at the seat reads the prompt its model would be sent."""
    return "\n\n".join(m.content for m in messages if isinstance(m.content, str))


def free_text(given: Mapping[str, str]) -> tuple[str, Optional[str]]:
    """A free turn's message (`text`; none: skipped), no decision: `content` of a turn asking only that."""
    return given.get("text", ""), None


class PersonLeft(RuntimeError):
    """The person's input ended (end of input at the terminal) while a seat waited: the unit ends
    as failed with this cause, and the same command continues it from that turn."""


class Person(Protocol):
    """Whoever answers at a seat: the text of one answer to `question` (`problem`: why the
    previous answer did not read; "" the first time)."""

    async def ask(self, asking: Asking, question: Question, problem: str) -> str: ...


@dataclass
class Answered:
    """A seat's turn: each question's answer (by key), exactly what was typed, how long it took,
    and what stood in when the time ran out (`fallback`)."""

    asking: Asking
    values: dict[str, str] = field(default_factory=dict)
    typed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    limit_s: Optional[float] = None
    fallback: Literal["", "model", "skip"] = ""

    def event(self, turn: int) -> Human:
        """The `human` event of the turn numbered `turn`."""
        return Human(turn=turn, seat=self.asking.seat, speaker=self.asking.speaker,
                     asked=[q.prompt for q in self.asking.questions], answers=list(self.typed),
                     seconds=self.seconds, limit_s=self.limit_s, fallback=self.fallback)


class Seat:
    """One agent's seat: its spec, the person answering there, where its pending file goes (the run
    folder; `transcript`: the file name of the unit's transcript, which the file names), and the
    lock its person's turns take (shared by the agents of one seat)."""

    def __init__(self, spec: SeatSpec, person: Person, folder: Optional[Path] = None, transcript: str = "",
                 turns: Optional[asyncio.Lock] = None):
        self.spec, self.person, self.folder, self.transcript = spec, person, folder, transcript
        self.turns = turns or asyncio.Lock()
        self._asked = ""  # this turn's id in the pending file

    @property
    def pending(self) -> Optional[Path]:
        """The file saying what the seat waits for (None: nowhere to write it)."""
        return pending_file(self.folder, self.spec.name) if self.folder else None

    async def take(self, asking: Asking) -> Answered:
        """The person's answers to the turn's questions, or the fallback when the limit runs out
        (counted from when the person is asked: after any other turn of the seat)."""
        async with self.turns:
            return await self._take(asking)

    async def _take(self, asking: Asking) -> Answered:
        answered = Answered(asking, limit_s=self.spec.limit_s)
        self._asked = secrets.token_hex(6)
        started = time.monotonic()
        try:
            if self.spec.limit_s is None:
                await self._answer(answered)
            else:
                await asyncio.wait_for(self._answer(answered), self.spec.limit_s)
        except asyncio.TimeoutError:
            answered.fallback = "model" if self.spec.fallback == "model" else "skip"
            answered.values = {}
        finally:
            answered.seconds = round(time.monotonic() - started, 3)
            self._clear()
        return answered

    async def _answer(self, answered: Answered) -> None:
        for question in answered.asking.questions:
            if question.asked_if is None or answered.values.get(question.asked_if[0]) == question.asked_if[1]:
                answered.values[question.key] = await self._one(answered, question)

    async def _one(self, answered: Answered, question: Question) -> str:
        problem = ""
        while True:
            self._write(answered, question, problem)
            text = await self.person.ask(answered.asking, question, problem)
            answered.typed.append(as_recorded(text))
            value, problem = question.read(text)
            if value is None:
                continue
            if question.kind == "text" and question.required and not value.strip():
                confirm = Question(f"{question.key}:empty", "Send an empty turn?", (YES, NO))
                sure = await self._one(answered, confirm)
                if sure != YES:
                    problem = "write the turn"
                    continue
            return value

    def _write(self, answered: Answered, question: Question, problem: str) -> None:
        """The pending file: the turn, its questions, the one asked now and why the last answer did
        not read, under an id no other question has (moot.saved.seatfiles)."""
        if self.pending is None:
            return
        asking = answered.asking
        self.pending.parent.mkdir(parents=True, exist_ok=True)
        data = {"id": f"{self._asked}-{len(answered.typed)}", "transcript": self.transcript,
                "seat": asking.seat, "speaker": asking.speaker, "label": asking.label, "where": asking.where,
                "action": asking.action, "shown": asking.shown, "asked": question.as_dict(), "problem": problem,
                "questions": [q.as_dict() for q in asking.questions], "limit_s": self.spec.limit_s}
        write_atomic(self.pending, json.dumps(data, ensure_ascii=False, indent=1) + "\n")

    def _clear(self) -> None:
        if self.pending is not None:
            self.pending.unlink(missing_ok=True)
            try:
                self.pending.parent.rmdir()  # no seat waits
            except OSError:
                pass


class ScriptedPerson:
    """A person whose answers are given in advance (tests); `asked` keeps every question put. Once
    the answers run out it waits, as a person who does not answer (a seat's time limit, a stop)."""

    def __init__(self, answers: Sequence[str] = ()):
        self.answers = list(answers)
        self.asked: list[tuple[Asking, Question, str]] = []

    async def ask(self, asking: Asking, question: Question, problem: str) -> str:
        self.asked.append((asking, question, problem))
        if not self.answers:
            await asyncio.Event().wait()
        return self.answers.pop(0)


class QueuedPerson:
    """A person whose answers arrive from elsewhere in the process (a browser page's handler):
    `await answer(text)` answers the question the seat waits on (its pending file says which)."""

    def __init__(self) -> None:
        self._answers: asyncio.Queue[str] = asyncio.Queue()

    async def answer(self, text: str) -> None:
        await self._answers.put(text)

    async def ask(self, asking: Asking, question: Question, problem: str) -> str:
        return await self._answers.get()


class FolderPerson:
    """A person answering through the run folder's seat files (moot.saved.seatfiles). `run`: the run
    folder."""

    POLL_S = 0.1

    def __init__(self, run: Path):
        self.run = Path(run)

    async def ask(self, asking: Asking, question: Question, problem: str) -> str:
        while True:
            text = self._taken(asking.seat)
            if text is not None:
                return text
            await asyncio.sleep(self.POLL_S)

    def _taken(self, seat: str) -> Optional[str]:
        """The answer to the question asked now, once it is there: it is removed, and so is the
        question (no page shows it as asked while the seat moves on); an answer to another
        question is removed unread."""
        path = answer_file(self.run, seat)
        if not path.exists():
            return None
        found = read_json(path) or {}
        asked = found.get("asked")
        if asked is not None and asked != (read_pending(self.run, seat) or {}).get("id"):
            path.unlink(missing_ok=True)
            return None
        pending_file(self.run, seat).unlink(missing_ok=True)
        path.unlink(missing_ok=True)
        text = found.get("text")
        return text if isinstance(text, str) else ""


async def proxied(seat: Seat, asking: Asking, cancellation_token: CancellationToken) -> Answered:
    """A turn put to a person through a one-off SeatProxy (a protocol whose turns are not chat
    messages between agents: an item's agent answering in its round)."""
    proxy = SeatProxy(asking.speaker if asking.speaker.isidentifier() else "seat", seat)
    proxy.asking = lambda: asking  # type: ignore[method-assign]  # this one turn's questions
    try:
        await proxy.on_messages([TextMessage(content=asking.shown or asking.action, source="user")], cancellation_token)
    except Exception:
        if proxy.failure is not None:  # AutoGen wraps it twice: the person left, say so
            raise proxy.failure from None
        raise
    assert proxy.answered is not None
    return proxy.answered


class SeatProxy(UserProxyAgent):
    """AutoGen's user proxy at a seat: on its turn the input function puts the turn's questions
    (`asking()`) to the seat, and `message_of` makes the turn's chat message from the answers
    (a protocol's subclass: metadata for its routing; the seat's model standing in at a limit)."""

    def __init__(self, name: str, seat: Seat, description: str = "a person at a seat"):
        super().__init__(name, description=description, input_func=self._input)
        self.seat = seat
        self._asking: Optional[Asking] = None
        self.answered: Optional[Answered] = None
        self.failure: Optional[BaseException] = None  # kept so the caller re-raises the real cause

    async def _input(self, prompt: str, cancellation_token: Optional[CancellationToken]) -> str:
        assert self._asking is not None
        taking = asyncio.ensure_future(self.seat.take(self._asking))
        if cancellation_token is not None:
            cancellation_token.link_future(taking)  # a stopped run does not wait for the person
        try:
            self.answered = await taking
        except Exception as exc:  # noqa: BLE001 - AutoGen wraps it; the caller re-raises this one
            self.failure = exc
            raise
        return json.dumps(self.answered.values, ensure_ascii=False)

    async def on_messages_stream(self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
                                 ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Response, None]:
        self.received(messages)
        self._asking = self.asking()
        self._forget()
        async for item in super().on_messages_stream(messages, cancellation_token):
            answered = self.answered
            if isinstance(item, Response) and answered is not None:
                try:
                    message = await self.message_of(answered, cancellation_token)
                except Exception as exc:  # noqa: BLE001 - e.g. the stand-in model's call failed
                    self.failure = self.failure or exc
                    raise
                yield Response(chat_message=message)
            else:
                yield item

    def _forget(self) -> None:
        """A new turn: the last turn's answers are not this one's."""
        self.answered = None

    def received(self, messages: Sequence[BaseChatMessage]) -> None:
        """Keep what the group chat sent since this seat's last turn."""

    def asking(self) -> Asking:
        """This turn's questions."""
        raise NotImplementedError

    async def message_of(self, answered: Answered, cancellation_token: CancellationToken) -> BaseChatMessage:
        """The turn's chat message from the seat's answers."""
        return TextMessage(content=json.dumps(answered.values, ensure_ascii=False), source=self.name)
