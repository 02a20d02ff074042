"""A person's turns in a negotiation.

A person may take the generator's or the discriminator's seat in every negotiation (`moot run
--human generator`), or an LLM's (`first`, `second`, `third`: its turns in both roles; a role's
seat comes first): shown the prompt the model would be sent, the generator writes its reasoning and
chooses a decision; the discriminator says whether the generator's decision is right and, if not,
which is and why. The turns read as a model's would (consensus, the role-flipped negotiation, the
vote). The demonstrations stay the models' own.
"""

from __future__ import annotations

import json
from typing import Mapping, Optional, Sequence

from autogen_core.models import LLMMessage

from moot.kit import Asking, Question, Seat, shown_of
from moot.protocols.negotiation.schema import NegotiationScenario
from moot.speaker_selection.negotiation import AGREE

GEN, DISC = "generator", "discriminator"
DECISION = "\nDecision: "


def seats(s: NegotiationScenario) -> dict[str, tuple[str, ...]]:
    """The seats a person may take: each role, and each LLM (its turns in both roles)."""
    return {GEN: (GEN,), DISC: (DISC,), **{llm: (llm,) for llm in s.roles()}}


def generator_asking(seat: Seat, labels: Sequence[str], gen: str, stage: str, round: int,
                     history: Sequence[LLMMessage]) -> Asking:
    return Asking(seat.spec.name, gen, f"{gen} (generator)", f"{stage} R{round}", stage,
                  (Question("text", "Your reasoning"), Question("decision", "Your decision", tuple(labels))),
                  shown=shown_of(history))


def discriminator_asking(seat: Seat, labels: Sequence[str], disc: str, stage: str, round: int, prompt: str,
                         decision: Optional[str]) -> Asking:
    return Asking(seat.spec.name, disc, f"{disc} (discriminator)", f"{stage} R{round}", stage,
                  (Question("attitude", f"Is the generator's decision ({decision or 'none'}) right?", (AGREE, "no")),
                   Question("decision", "The right decision", tuple(labels), asked_if=("attitude", "no")),
                   Question("explanation", "Why (the generator reads it)", asked_if=("attitude", "no"))),
                  shown=prompt)


def generated(given: Mapping[str, str]) -> tuple[str, Optional[str]]:
    """A person's generator turn as the model's would read: the reasoning, then `Decision: X`."""
    if not given:
        return "", None
    return f"{given.get('text', '')}{DECISION}{given['decision']}", given["decision"]


def discriminated(given: Mapping[str, str], decision: Optional[str]) -> str:
    """A person's discriminator turn as the model's structured reply: "yes" holds the generator's
    decision; a skipped turn is none (it reads as "no")."""
    if not given:
        return ""
    agrees = given["attitude"] == AGREE
    return json.dumps({"attitude": given["attitude"], "decision": decision if agrees else given.get("decision"),
                       "explanation": given.get("explanation", "")}, ensure_ascii=False)
