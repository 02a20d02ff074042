"""How a protocol's unit reads: one description for the terminal (live and replay), Markdown and
HTML, given by the protocol (its `view`, moot.contract.protocol).

The defaults read an item: a section per stage (a message's `action`) in the order it first
occurred, each turn tagged with its stage and round and followed by its decision, the outcome
last. A protocol of another shape subclasses UnitView; the views ask it, never a protocol's
event classes. It is built from the run's scenario as recorded (`run_started.scenario`, plain
JSON): a transcript of an older moot reads without its scenario validating today.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Mapping, Optional, Sequence

from moot.log.events import EventBase, Json, Message
from moot.log.transcript import Transcript
from moot.saved.records import ResultRow
from moot.views.blocks import Companion


ANSWER = "_answer"  # the suffix of a stage's closed answer (see split_answer)


@dataclass(frozen=True)
class Place:
    """A section: `key` tells sections apart, `title` heads it; `rounds`: a header for every round
    (else a document shows round headers only in a section that had several rounds)."""

    key: str
    title: str
    rounds: bool = False


@dataclass(frozen=True)
class TurnText:
    """How a turn reads: `[where] Speaker (action, 1.2s) → decision:` then `text` on a terminal;
    `step` is what its document entry says it was (`speak`, `round 2`)."""

    where: str
    step: str
    text: str
    action: str = ""  # named before its time on a terminal ("": none)
    decision: bool = True  # a terminal shows the message's decision after an arrow


class UnitView:
    """The view of one unit (see the module docstring)."""

    contents: ClassVar[bool] = False  # documents list the sections first

    def __init__(self, scenario: Mapping[str, Json], result_name: str = "prediction"):
        self.scenario, self.result_name = scenario, result_name

    def section(self, action: str, part: Optional[int]) -> Place:
        """The section of a turn (a recorded message, or one starting); a stage's closed answer
        goes with its stage."""
        stage, _ = split_answer(action)
        return Place(f"stage:{stage}", stage_title(stage))

    def turn(self, message: Message) -> TurnText:
        stage, answer = split_answer(message.action)
        step = f"round {message.round}" + (" answer" if answer else "")
        return TurnText(f"{stage} R{message.round}", step, message.content.strip(), "answer" if answer else "")

    def companion(self, event: EventBase) -> Optional[Companion]:
        """What a protocol event recorded with a turn shows; None: the event is no companion."""
        return None

    def speakers(self, roles: Sequence[str]) -> list[tuple[str, str]]:
        """(role, name) of everyone who takes a model, in order, from the roles as recorded."""
        return [(role, role) for role in roles]

    def labels(self) -> dict[str, str]:
        """What a speaker is called in the conversation, where that is not its name."""
        return {}

    def personas(self) -> dict[str, str]:
        """Each speaker's persona as the scenario gives it (by name), where it has one."""
        return {}

    def brief(self) -> list[tuple[str, str]]:
        """What the unit was asked, before its input: (label, text), such as the scenario's task."""
        task = self.scenario.get("task")
        return [("Task", task)] if isinstance(task, str) and task.strip() else []

    def input_label(self, name: str) -> str:
        """What an input field is called where the item's input is shown (its name by default)."""
        return name

    def parts(self) -> list[str]:
        """The unit's parts (`Message.part` numbers them), by title."""
        return []

    def summary(self, events: Sequence[EventBase]) -> list[str]:
        """The protocol's lines in a unit's summary (between its title and its usage)."""
        return []

    def ending(self, transcript: Transcript) -> list[str]:
        """What `moot run` prints when its one unit ends: the outcome and its explanation."""
        found = transcript.outcome
        if found is None:
            return []
        explained = [f"explanation: {found.explanation}"] if found.explanation else []
        return [f"{self.result_name}: {found.prediction}", *explained]


    def row(self, row: ResultRow) -> str:
        """A finished unit's line at the end of a batch that has no labels to score: its status."""
        return f"{row.id}: {row.status}"


def split_answer(action: str) -> tuple[str, bool]:
    """(its stage, whether it is the stage's closed answer): a turn that argued may be followed by
    its speaker's answer among the labels, recorded as `STAGE_answer` (moot.protocols.items.choices)."""
    stage = action.removesuffix(ANSWER)
    return (stage, True) if stage and stage != action else (action, False)


def stage_title(stage: str) -> str:
    text = stage.replace("_", " ").strip() or "stage"
    return text[0].upper() + text[1:]

