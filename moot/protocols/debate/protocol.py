"""Multi-agent debate (Du et al. 2023, "Improving Factuality and Reasoning in Language Models
through Multiagent Debate") for one labelled item — the common baseline for COLA and S2MAD.

1. Round 0: N agents answer the question about the text independently.
2. Rounds 1..R: each agent is shown the other agents' previous answers (its own is already in
   its memory: every agent is a chat with its own history, as in the paper) and may revise.
   The turns are taken in agent order by a group chat of AutoGen agents (speaker_selection.debate); a
   round's N calls start together at its first turn, since none depends on another.
3. Every answer is mapped onto a label by the shared rule (LabelSet.decide: unambiguous, else
   unparsed). The final label is the plurality of the last round's parsed answers; unparsed
   answers do not vote. A tie follows `tie:` (see `vote`).
"""

from __future__ import annotations

from moot.contract.protocol import InputField, Protocol
from moot.kit import ANY_STAGE, Expected, expected
from moot.protocols.debate.rounds import run
from moot.protocols.debate.schema import DebateScenario
from moot.protocols.items.metrics import RUMOUR_METRICS, answers_of
from moot.speaker_selection.debate import next_speaker


def scripted(s: DebateScenario) -> dict[str, Expected]:
    """A scripted agent's turn ends as Du et al.'s prompt asks, "Answer: <label>"."""
    return {ANY_STAGE: expected("(scripted) I weighed the text against the question.\nAnswer: {label}", label=s.labels)}


PROTOCOL = Protocol(
    name="debate",
    title="Multi-agent debate",
    paper="Du et al. 2023, Improving Factuality and Reasoning in Language Models through Multiagent Debate",
    scenario=DebateScenario,
    policy=next_speaker,
    run=run,
    inputs=(InputField("text", "text", help="the text the question is about (a post, a claim, a sentence)"),
            InputField("target", "target", required=False, help="what the stance is towards, if any")),
    result_name="answer",
    example="debate",
    metrics=RUMOUR_METRICS,
    calls=lambda s: float(s.agents * (s.rounds + 1)),
    rounds=lambda row: answers_of(row),
    seats=lambda s: {**{a: (a,) for a in s.roles()}, "agents": tuple(s.roles())},
    scripted=scripted,
)
