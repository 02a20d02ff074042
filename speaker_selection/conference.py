"""Algorithm 1 of Heller et al. (decision conferences), generalised to N participants.

The policy is a pure function of the turns so far. Routing reads only the structured
decision attached to a judge (or deciding moderator) turn, never the text, so a participant
writing "AGREEMENT" changes nothing and an unparsed verdict counts as MORE_DEBATE.

Flow per topic: moderator opens -> participants in order -> judge. AGREEMENT (or the round
cap) closes the topic -> evaluator scores it -> the assessor judges its reference coverage (a
topic with a reference outcome; moot's, not in Algorithm 1) -> moderator opens the next topic or
closes. MORE_DEBATE -> moderator (Algorithm 1) or the first participant (Fig. A2-A3), next round.
Without a judge (§5.2.2) the moderator decides after each round: NEXT_TOPIC or MORE_DEBATE.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Literal, Optional, Sequence

from moot.kit import PolicyError

AGREEMENT, MORE_DEBATE, NEXT_TOPIC, UNPARSED = "AGREEMENT", "MORE_DEBATE", "NEXT_TOPIC", "UNPARSED"
ClosedBy = Literal["agreement", "round_cap", "moderator"]
Action = Literal["open", "continue", "speak", "judge", "decide", "evaluate", "assess", "close", "end"]


@dataclass(frozen=True)
class Turn:
    """What the policy needs of a message: who spoke and, for a decision, what was decided."""

    speaker: str
    decision: Optional[str] = None


@dataclass(frozen=True)
class ConferencePlan:
    """The static shape of a conference: who plays which part, and the routing options."""

    moderator: str
    participants: tuple[str, ...]
    judge: Optional[str]
    evaluator: Optional[str]
    topic_count: int
    max_rounds: int
    agreement: Literal["judge", "moderator"] = "judge"
    on_more_debate: Literal["moderator", "participants"] = "moderator"
    assessor: Optional[str] = None
    assessed: tuple[int, ...] = ()  # the topics (0-based) whose reference coverage the assessor judges

    def __post_init__(self) -> None:
        if len(self.participants) < 2 or self.topic_count < 1 or self.max_rounds < 1:
            raise ValueError("a conference needs >= 2 participants, >= 1 topic and max_rounds >= 1")
        if self.agreement == "judge" and not self.judge:
            raise ValueError("agreement by judge needs a judge")
        if self.assessed and not self.assessor:
            raise ValueError("topics with a reference outcome need an assessor")


@dataclass(frozen=True)
class Step:
    """The next turn: who speaks, what they are asked to do, and where we are.

    topic is 0-based (None for the closing turn); round is 1-based; closed_by is set on the
    first step after a topic ended: "agreement", "round_cap" or "moderator".
    """

    speaker: Optional[str]
    action: Action
    topic: Optional[int]
    round: int = 1
    closed_by: Optional[ClosedBy] = None

    @property
    def in_topic(self) -> int:
        """The topic of a step within one (every step but the closing turn and the end)."""
        assert self.topic is not None, f"a {self.action} step is within no topic"
        return self.topic


def first_step(plan: ConferencePlan) -> Step:
    return Step(plan.moderator, "open", 0, 1)


def walk(plan: ConferencePlan, turns: Iterable[Turn]) -> list[Step]:
    """The step each turn filled, plus the next step last. Raises PolicyError on a wrong speaker."""
    steps = [first_step(plan)]
    for index, turn in enumerate(turns):
        step = steps[-1]
        if step.speaker is None:
            raise PolicyError(f"turn {index + 1} by {turn.speaker!r} comes after the conference closed")
        if turn.speaker != step.speaker:
            raise PolicyError(f"turn {index + 1}: expected {step.speaker!r} ({step.action}), got {turn.speaker!r}")
        steps.append(advance(plan, step, turn))
    return steps


def next_step(plan: ConferencePlan, turns: Iterable[Turn]) -> Step:
    """The next speaker and action given the turns so far (speaker None = conference over)."""
    return walk(plan, turns)[-1]


def advance(plan: ConferencePlan, step: Step, turn: Turn) -> Step:
    """The step after `turn` filled `step`."""
    first = plan.participants[0]
    if step.action in ("open", "continue"):
        return Step(first, "speak", step.topic, step.round)
    if step.action == "speak":
        position = plan.participants.index(step.speaker)
        if position + 1 < len(plan.participants):
            return Step(plan.participants[position + 1], "speak", step.topic, step.round)
        if plan.agreement == "judge":
            return Step(plan.judge, "judge", step.topic, step.round)
        return Step(plan.moderator, "decide", step.topic, step.round)
    if step.action == "judge":
        if turn.decision == AGREEMENT:
            return _close_topic(plan, step, "agreement")
        return _more_debate(plan, step)
    if step.action == "decide":
        if turn.decision == NEXT_TOPIC:
            return _close_topic(plan, step, "moderator")
        if step.round >= plan.max_rounds:
            return _close_topic(plan, step, "round_cap")
        return Step(first, "speak", step.topic, step.round + 1)
    if step.action == "evaluate":
        return _after_evaluation(plan, step)
    if step.action == "assess":
        return _after_topic(plan, step.in_topic)
    return Step(None, "end", None, step.round)


def _more_debate(plan: ConferencePlan, step: Step) -> Step:
    if step.round >= plan.max_rounds:
        return _close_topic(plan, step, "round_cap")
    if plan.on_more_debate == "moderator":
        return Step(plan.moderator, "continue", step.topic, step.round + 1)
    return Step(plan.participants[0], "speak", step.topic, step.round + 1)


def _close_topic(plan: ConferencePlan, step: Step, reason: ClosedBy) -> Step:
    if plan.evaluator:
        return Step(plan.evaluator, "evaluate", step.topic, step.round, closed_by=reason)
    return replace(_after_evaluation(plan, step), closed_by=reason)


def _after_evaluation(plan: ConferencePlan, step: Step) -> Step:
    if step.topic in plan.assessed:
        return Step(plan.assessor, "assess", step.topic, step.round)
    return _after_topic(plan, step.in_topic)


def _after_topic(plan: ConferencePlan, topic: int) -> Step:
    if topic + 1 < plan.topic_count:
        return Step(plan.moderator, "open", topic + 1, 1)
    return Step(plan.moderator, "close", None, 1)
