"""How a conference turn that decides or scores is asked for, read and shown to the others.

The judge writes its answer in one of two forms (a scenario's `judging.form`): `structured`, moot's JSON
{"verdict", "reason"} under structured output, or `text`, the paper's plain reply ("MORE DEBATE",
"AGREEMENT"; Heller et al. §4.2, Figs. A2-A3) read by `moot.protocols.conference.verdicts.read_judge_text`. Whether
the judge's reason reaches the others is `judging.forward_reason`: the paper's judge only "informs
the moderator agent if an agreement is reached or not" (§3.2.1), so without forwarding every
agent reads a judge's turn as its verdict alone. The deciding moderator (without a judge) and the
evaluator write structured JSON. Routing reads only `decision`, never the text.

Read from the model's probabilities instead (`choice: likelihood`, conference_measures), a
judge's turn is its verdict label, a deciding moderator's the same JSON as a written one, and an
evaluator's its expected scores and rationale as JSON (moot.protocols.conference.verdicts.ExpectedScores); such a
turn carries a `Measured` record, which is how its scores are told from written integers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from pydantic import BaseModel

from moot.kit import Closed, Measured, Parsed, parse_reply
from moot.speaker_selection.conference import UNPARSED
from moot.protocols.conference.verdicts import (
    CRITERIA, EvaluatorScores, JudgeVerdict, ModeratorDecision, read_judge, read_scores, score_text,
)

if TYPE_CHECKING:
    from moot.protocols.conference.schema import Judging

OUTPUT_OF_ACTION: dict[str, type[Closed]] = {"judge": JudgeVerdict, "decide": ModeratorDecision, "evaluate": EvaluatorScores}
NO_VERDICT = "(no clear verdict)"

@dataclass(frozen=True)
class Reading:
    """A scenario's judging settings: the judge's answer form and whether its reason is passed on."""

    judge_form: str = "structured"
    forward_reason: bool = True

    @classmethod
    def of(cls, judging: Judging) -> "Reading":
        """The reading a scenario's `judging` block asks for."""
        return cls(judging.form, judging.forward_reason)

    def output(self, action: str) -> Optional[type[BaseModel]]:
        """The structured output a turn asks for; None: free text (also the `text` judge)."""
        if action == "judge" and self.judge_form == "text":
            return None
        return OUTPUT_OF_ACTION.get(action)

    def template(self, role: str, action: str) -> str:
        """The prompt template of a turn: `<role>_turn` for a debate, judge, evaluation or assessment
        turn, the `text` judge's `judge_turn_text`, the moderator's `moderator_<action>`, and
        without the judge's reason `moderator_continue_no_reason`."""
        if action == "judge" and self.judge_form == "text":
            return "judge_turn_text"
        if action == "continue" and not self.forward_reason:
            return "moderator_continue_no_reason"
        return f"{role}_{'turn' if action in ('speak', 'judge', 'evaluate', 'assess') else action}"

    def parse(self, action: str, content: str, measured: Optional[Measured] = None) -> Optional[Parsed[Any]]:
        """A judge, deciding-moderator or evaluator reply parsed (None for any other turn);
        `measured`: the turn's Measured record, if any."""
        if action == "judge":
            return read_judge(self.judge_form, content)
        if action == "evaluate":
            return read_scores(content, measured is not None)
        output = OUTPUT_OF_ACTION.get(action)
        return parse_reply(output, content) if output else None

    def decision(self, action: str, content: str) -> Optional[str]:
        """The routing decision of a judge or deciding-moderator turn; UNPARSED when unreadable."""
        if action not in ("judge", "decide"):
            return None
        parsed = self.parse(action, content)
        assert parsed is not None  # a judge's or deciding moderator's turn is always read
        value = parsed.value
        if value is None:
            return UNPARSED
        return value.verdict if isinstance(value, JudgeVerdict) else value.decision

    def display(self, action: str, content: str, measured: Optional[Measured] = None) -> str:
        """How a turn reads to the other agents: decisions in words, not raw JSON; a judge's turn as
        its verdict alone unless its reason is forwarded."""
        if action == "judge" and not self.forward_reason:
            decision = self.decision(action, content)
            return NO_VERDICT if decision is None or decision == UNPARSED else decision.replace("_", " ")
        if action == "judge" and self.judge_form == "text":
            return content.strip()
        parsed = self.parse(action, content, measured)
        if parsed is None:
            return content.strip()
        value = parsed.value
        if value is None:
            return f"(unparsed reply) {content.strip()}"
        if isinstance(value, JudgeVerdict):
            return f"{value.verdict}: {value.reason}".rstrip(": ")
        if isinstance(value, ModeratorDecision):
            return value.message
        expected = measured is not None
        scores = ", ".join(f"{c}={score_text(getattr(value, c), expected)}" for c in CRITERIA)
        return f"Scores: {scores}; overall={score_text(value.overall, expected)}. {value.rationale}"
