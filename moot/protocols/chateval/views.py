"""How a ChatEval unit reads: its input, each order's turns and the referees' judgements."""

from __future__ import annotations

from typing import Optional, Sequence

from moot.kit import (
    Badge, Companion, EventBase, Grade, Message, Place, Question, ResultRow, Transcript, TurnText, UnitView,
    Unreadable,
)
from moot.protocols.chateval.events import Judgement
from moot.protocols.chateval.schema import HI
from moot.speaker_selection.chateval import SUMMARIZER


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

    def row(self, row: ResultRow) -> str:
        score = row.extra("score")
        return f"{row.id}: {row.status}" + (f" (score {score})" if score is not None else "")
