"""A rater's blind session over a finished run (`moot annotate RUN`), wherever the rater sits: the
terminal (moot.cli.annotate) or the browser (moot.viewer.rating).

The rater's name (asked when not given, until one is given), then each rateable thing of each
finished unit that this rater has not rated (moot.contract.rating: what the protocol declares),
put to the rater as a seat's turn (moot.kit.seats: a closed answer asked again until it reads,
a score a whole number in its scale). Each rated thing is appended to the run's annotations file
(moot.log.annotations) in one write, with the rater's name and the time, before the model's
answers are revealed beside the rater's: the material shown while the rater answers never holds
them. What this rater rated before is skipped, so the same session started again goes on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Protocol

from moot.contract.rating import Rateable
from moot.contract.registry import PROTOCOLS
from moot.kit.seats import Asking, Person, Question, Seat, SeatSpec
from moot.saved.source import RunSource, UnitRef
from moot.log.annotations import Rating, append_ratings, rated_by
from moot.log.transcript import now

SEAT = "rater"
NAME = Question("name", "Your name (the annotations record who rated)", lines=False)
NO_NAME = "give a name (the annotations record who rated)"


@dataclass(frozen=True)
class Todo:
    """What is left for one rater: each (unit, thing) in order, and how many they rated before."""

    rater: str
    things: list[tuple[UnitRef, Rateable]]
    before: int


@dataclass(frozen=True)
class Revealed:
    """A thing just rated: the rater's answers and, beside them, the model's."""

    unit: str
    thing: Rateable
    yours: dict[str, str]

    def rows(self) -> list[tuple[Question, str, str]]:
        """(question, the rater's answer, the model's answer or `unparsed`) for each question."""
        return [(q, self.yours[q.key], model_answer(self.thing, q.key)) for q in self.thing.questions]


def model_answer(thing: Rateable, key: str) -> str:
    found = thing.model.get(key)
    return "unparsed" if found is None else found


class Rater(Person, Protocol):
    """Whoever rates: a Person answering the questions, told what is left and shown each reveal."""

    def begin(self, todo: Todo) -> None: ...

    def revealed(self, done: Revealed, number: int, count: int) -> None: ...


def finished(source: RunSource) -> list[UnitRef]:
    return [u for u in source.units if u.result is not None and u.result.state == "completed"]


def left_to_rate(source: RunSource, rater: str, limit: Optional[int] = None) -> Todo:
    """Every thing of the run's finished units that `rater` has not rated (at most `limit`)."""
    protocol = PROTOCOLS.get(str(source.record.protocol_name))
    done = rated_by(source.path, rater)
    things = [(unit, thing) for unit in finished(source) for thing in protocol.rateables(unit.load())
              if (unit.id, thing.id) not in done]
    return Todo(rater, things[:limit], len(done))


async def ask_name(person: Person) -> str:
    """The rater's name, asked until one is given."""
    asking = Asking(SEAT, SEAT, SEAT, "start", "annotate", (NAME,))
    problem = ""
    while True:
        typed, unfit = NAME.read(await person.ask(asking, NAME, problem))  # UTF-8, bounded
        name = (typed or "").strip()
        if name:
            return name
        problem = unfit or NO_NAME


async def rate(person: Person, source: RunSource, rater: str, unit: UnitRef, thing: Rateable,
               counter: str) -> Optional[Revealed]:
    """One thing put to the rater, their answers appended to the annotations file; None when
    another session of the same rater rated it first (before it was asked, or meanwhile)."""
    if (unit.id, thing.id) in rated_by(source.path, rater):
        return None
    asking = Asking(SEAT, rater, rater, f"{counter} · unit {unit.id}", thing.id, thing.questions, thing.shown)
    answered = await Seat(SeatSpec(SEAT), person).take(asking)
    stamp = now()
    kept = append_ratings(source.path, [Rating(rater=rater, unit=unit.id, item=thing.id, kind=thing.kind, key=q.key,
                                               value=answered.values[q.key], ts=stamp, seconds=answered.seconds)
                                        for q in thing.questions])
    return Revealed(unit.id, thing, {q.key: answered.values[q.key] for q in thing.questions}) if kept else None


async def session(source: RunSource, rater: Optional[str], limit: Optional[int], person: Rater,
                  todo: Optional[Todo] = None) -> Todo:
    """One rater's session (module docstring; `todo`: what is left, when found already); what it had to rate."""
    if todo is None:
        name = rater.strip() if rater is not None else await ask_name(person)
        todo = left_to_rate(source, name, limit)
    person.begin(todo)
    count = len(todo.things)
    for number, (unit, thing) in enumerate(todo.things, 1):
        done = await rate(person, source, todo.rater, unit, thing, f"{number}/{count}")
        if done is not None:
            person.revealed(done, number, count)
    return todo
