"""A conference role a person plays (`moot run --human SEAT`), as an AutoGen user proxy.

The seated agent sits in the same SelectorGroupChat as the models and is picked by the same
policy. On its turn the person is asked what the turn needs: free text for the moderator's and
the participants' turns; the judge's verdict (AGREEMENT or MORE_DEBATE, and for MORE_DEBATE a
one-line reason where the scenario forwards it to the moderator) and the deciding
moderator's decision (NEXT_TOPIC or MORE_DEBATE, then what it says) from the allowed answers; the
evaluator's ten criteria and overall score (1-10) and a rationale. The answers become the turn's
message in the form the role's model would have written it, so routing, verdicts and scores are
read from it exactly as from a model's. When the seat's time runs out with fallback `model`, the
seat's model (a ConferenceAgent sharing the thread) takes the turn; with `skip`, the turn is empty
(a closed turn then reads as unparsed). The message carries `source` and the `human` record. A
run continued (after a stop) first shows the person the current topic's conversation so far,
which the screen no longer holds.
"""

from __future__ import annotations

import json
from typing import Optional, Sequence

from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_core import CancellationToken

from moot.agents.conference.agent import ConferenceAgent, measured_of, to_turns, turn_metadata
from moot.agents.conference.setup import ConferenceSetup
from moot.kit import Answered, Asking, Question, Reply, Seat, SeatProxy
from moot.protocols.conference.texts import where_text
from moot.protocols.conference.verdicts import CRITERIA, CRITERIA_TEXT, OVERALL_TEXT, criterion_title
from moot.speaker_selection.conference import AGREEMENT, MORE_DEBATE, NEXT_TOPIC, Step, walk

HUMAN = "human"  # a message's `source` for a person's turn (the `model` field stays empty)
REASON = Question("reason", "Why more debate? The moderator is told (one line; Enter alone for none)", lines=False,
                  required=False, asked_if=("verdict", MORE_DEBATE))


def questions_for(step: Step, setup: ConferenceSetup) -> tuple[Question, ...]:
    """What a person is asked on a turn, in order."""
    if step.action == "judge":
        verdict = Question("verdict", "Your verdict: have the participants reached agreement?", (AGREEMENT, MORE_DEBATE))
        return (verdict, REASON) if reason_asked(setup) else (verdict,)
    if step.action == "decide":
        return (Question("decision", "Move on to the next topic, or more debate?", (NEXT_TOPIC, MORE_DEBATE)),
                Question("message", "What you say to the participants"))
    if step.action == "evaluate":
        scores = [Question(c, f"{criterion_title(c)}: {CRITERIA_TEXT[c]}", scale=(1, 10)) for c in CRITERIA]
        return (*scores, Question("overall", f"Overall: {OVERALL_TEXT}", scale=(1, 10)),
                Question("rationale", "Why (a sentence or two)"))
    topic = f" on topic {step.topic + 1}: {setup.topics[step.topic]}" if step.topic is not None else ""
    return (Question("text", f"Your turn ({step.action}{topic})"),)


def reason_asked(setup: ConferenceSetup) -> bool:
    """Whether a judge at a seat gives a reason: where the scenario forwards the judge's reason to
    the moderator (`judging.forward_reason`) and its answer has a field for it (the structured form;
    a reason in the paper's plain-text reply could be read as a second label)."""
    return setup.reading.forward_reason and setup.reading.judge_form != "text"


def content_of(step: Step, values: dict[str, str], setup: ConferenceSetup) -> str:
    """The turn's message as the role's model would write it ("" for a skipped turn)."""
    if not values:
        return ""
    if step.action == "judge":
        verdict = values["verdict"]
        if setup.reading.judge_form == "text":
            return verdict.replace("_", " ")
        return json.dumps({"verdict": verdict, "reason": values.get("reason", "").strip()}, ensure_ascii=False)
    if step.action == "decide":
        return json.dumps({"decision": values["decision"], "message": values["message"]}, ensure_ascii=False)
    if step.action == "evaluate":
        scores = {c: int(values[c]) for c in (*CRITERIA, "overall")}
        return json.dumps({**scores, "rationale": values["rationale"]}, ensure_ascii=False)
    return values["text"]


class SeatedConferenceAgent(SeatProxy):
    """A conference agent whose turns a person takes; `stand_in` is the seat's model."""

    def __init__(self, stand_in: ConferenceAgent, seat: Seat, resumed: bool = False):
        super().__init__(stand_in.name, seat, f"{stand_in.role} of the conference, played by a person")
        self.stand_in, self.setup = stand_in, stand_in.setup
        self.step: Optional[Step] = None
        self.recap = resumed  # the first turn of a continued run recalls the topic's conversation so far

    @property
    def last_calls(self) -> list[Reply]:
        return self.stand_in.last_calls

    def received(self, messages: Sequence[BaseChatMessage]) -> None:
        self.stand_in._thread.extend(m for m in messages if isinstance(m, BaseChatMessage))

    def asking(self) -> Asking:
        self.step = step = walk(self.setup.plan, to_turns(self.stand_in._thread))[-1]
        shown, self.recap = (self.so_far(step) if self.recap else ""), False
        return Asking(self.seat.spec.name, self.name, self.setup.label(self.name),
                      where_text(step.topic, step.round), step.action, questions_for(step, self.setup), shown)

    def so_far(self, step: Step) -> str:
        """The current topic's turns (the closing's: the last topic's), as this agent reads them:
        what a person resuming at the seat has not seen on this screen."""
        chat = [m for m in self.stand_in._thread if isinstance(m, BaseChatMessage) and "topic" in m.metadata]
        topic = step.topic if step.topic is not None else max((int(m.metadata["topic"]) for m in chat), default=None)
        turns = [m for m in chat if m.metadata["topic"] == str(topic)]
        if topic is None or not turns:
            return ""
        lines = [f"The conversation so far on topic {topic + 1} ({self.setup.topics[topic]}):"]
        for m in turns:
            said = self.setup.reading.display(m.metadata["action"], m.to_text(), measured_of(m))
            lines.append(f"\n[{where_text(topic, int(m.metadata['round']))}] {self.setup.label(m.source)}: {said}")
        return "\n".join(lines)

    async def message_of(self, answered: Answered, cancellation_token: CancellationToken) -> BaseChatMessage:
        assert self.step is not None
        self.stand_in.last_calls = []
        if answered.fallback == "model":
            try:
                message = await self.stand_in.reply(cancellation_token)
            finally:
                self.failure = self.stand_in.failure
        else:
            content = content_of(self.step, answered.values, self.setup)
            decision = self.setup.reading.decision(self.step.action, content)
            meta = turn_metadata(self.step, self.stand_in.role, decision, "", latency_s=answered.seconds, calls=0)
            message = TextMessage(content=content, source=self.name, metadata={**meta, "source": HUMAN})
        message.metadata["human"] = answered.event(0).model_dump_json()
        self.stand_in._thread.append(message)
        return message

    async def on_reset(self, cancellation_token: Optional[CancellationToken] = None) -> None:
        await self.stand_in.on_reset(cancellation_token or CancellationToken())
