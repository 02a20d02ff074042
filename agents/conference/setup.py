"""What every conference agent is given besides its model: the plan, the texts and the templates.

Its own module, below the agent, its transcript document and its closed questions, which all read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from moot.agents.conference.reading import Reading
from moot.protocols.conference.verdicts import coverage_model
from moot.speaker_selection.conference import ConferencePlan, Step


@dataclass(frozen=True)
class ConferenceSetup:
    """Everything a conference agent needs besides its model: the plan, texts and templates."""

    plan: ConferencePlan
    title: str
    task: str
    topics: tuple[str, ...]
    templates: Mapping[str, str]
    window: Any  # the scenario's ContextWindow (what each agent is shown)
    reading: Reading = Reading()  # how the judge answers and what the others learn from it
    references: Mapping[int, Sequence[Any]] = field(default_factory=dict)  # topic -> reference items
    labels: Mapping[str, str] = field(default_factory=dict)  # agent name -> what it is called
    personas: Mapping[str, str] = field(default_factory=dict)  # agent name -> persona
    choice: str = "structured"  # the scenario's `choice`: auto | likelihood | structured
    threshold: float = 0.8  # the scenario's `agreement_threshold`

    def output(self, step: Step) -> Optional[type]:
        """The structured output a turn asks for (None: free text)."""
        if step.action == "assess":
            return coverage_model(tuple(i.name for i in self.references[step.in_topic]))
        return self.reading.output(step.action)

    def label(self, name: str) -> str:
        return self.labels.get(name, name)

    def participants(self) -> str:
        """`$participants`: the participants as they are called, `A and B`."""
        return and_list([self.label(p) for p in self.plan.participants])


def and_list(items: Sequence[str]) -> str:
    """`A`, `A and B`, `A, B and C`."""
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
