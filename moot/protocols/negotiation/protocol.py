"""LLM negotiation for sentiment analysis (Sun et al.) — one text.

Two LLMs negotiate: the generator reasons and decides, the discriminator agrees or explains why
not, until a consensus or max_turns (negotiator; demonstrations: knn). The negotiation and the
role-flipped one run concurrently and combine by the paper's rules; conflicting decisions bring
in the third LLM: four more negotiations and a six-way vote (run, outcome). A person may take a
role's or an LLM's seat (seats). The scenario: schema. No event types, view or report of its own:
its turns, outcome and scores are the item protocols' common ones.
"""

from __future__ import annotations

from moot.contract.protocol import InputField, Protocol
from moot.kit import ANY_STAGE, Expected, expected
from moot.protocols.negotiation.run import rescore, run
from moot.protocols.negotiation.schema import NegotiationScenario
from moot.protocols.negotiation.seats import seats
from moot.speaker_selection.negotiation import next_speaker


def scripted(s: NegotiationScenario) -> dict[str, Expected]:
    """A scripted generator's turn ends with its "Decision: <label>" (a discriminator's verdict is
    closed: structured, or yes / no)."""
    return {ANY_STAGE: expected("(scripted) I read the input step by step.\nDecision: {label}", label=s.labels)}


PROTOCOL = Protocol(
    name="negotiation",
    title="LLM negotiation for sentiment analysis",
    paper="Sun et al. 2023, Sentiment Analysis through LLM Negotiations",
    scenario=NegotiationScenario,
    policy=next_speaker,
    run=run,
    inputs=(InputField("text", "text", help="the text whose sentiment is judged"),),
    result_name="sentiment",
    deciders=("third",),
    rescore=rescore,
    example="negotiation",
    seats=seats,
    scripted=scripted,
)
