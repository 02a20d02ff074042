"""What people may rate, blind, in a finished unit (`moot annotate RUN`), and how the model rated it.

A protocol lists a unit's rateable things (Protocol.rating): each with an id unique in the unit,
a `kind` shared by the same sort of thing across units and runs (agreement is computed per kind
and question), what the rater is shown (the material the model decided on, without the model's
answer), the questions (moot.kit.Question: a closed choice or a 1-10 score), and the
model's answer to each (None: unparsed), shown only once the rater has answered. A protocol whose
units are labelled items rates each item's label by default (`item_labels`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

from moot.kit import Question
from moot.log.transcript import Transcript


@dataclass(frozen=True)
class Rateable:
    """One thing a rater rates in a unit (see the module docstring)."""

    id: str
    kind: str
    shown: str
    questions: tuple[Question, ...]
    model: Mapping[str, Optional[str]] = field(default_factory=dict)  # question key -> the model's answer
    by: str = ""  # the model that answered (its spec)
    part: str = ""  # where in the unit (a conference's `T1`): the columns of the report's table by part


LABEL = "label"


def item_labels(transcript: Transcript) -> tuple[Rateable, ...]:
    """A labelled item's label: shown its input, asked for one of the scenario's labels; the
    model's answer is the unit's prediction (unparsed: None)."""
    started = transcript.started
    labels = started.scenario.get("labels")
    if not isinstance(labels, list) or not labels:
        return ()
    shown = "\n".join(f"{key}: {value}" for key, value in started.inputs.items() if value)
    outcome = transcript.outcome
    prediction = outcome.prediction if outcome is not None and outcome.prediction in labels else None
    question = Question(LABEL, "Your label for this item", tuple(str(label) for label in labels))
    return (Rateable(LABEL, LABEL, shown, (question,), {LABEL: prediction}, ", ".join(sorted(set(started.models.values())))),)
