"""S2MAD's judge (Zhang et al., Alg. 1): when the debaters end on different labels, the judge reads
the claim and both debaters' last replies and decides; a rescore asks it anew from a transcript."""

from __future__ import annotations

from typing import Any, Optional

from autogen_core.models import UserMessage

from moot.agents.prompts import inset, render
from moot.kit import Transcript, UnitContext
from moot.protocols.s2mad.document import JUDGE, N, P, ClaimDocuments, Content, Said
from moot.protocols.s2mad.schema import S2madScenario
from moot.protocols.s2mad.turns import Answer, options_of, turn_of


async def ask_judge(s: S2madScenario, ctx: UnitContext, claim: str, reply_p: str, reply_n: str,
                    labels: tuple[Optional[str], Optional[str]] = (None, None), **record: Any) -> tuple[str, Answer]:
    """The judge's turn: the claim and both debaters' last replies (and, on a base model, their verdicts)."""
    prompt = render(s.templates()["judge"], {"claim": claim, "reply_p": inset(reply_p), "reply_n": inset(reply_n),
                                             "options": options_of(s)})
    content = Content(claim, turns=(Said(P, reply_p, labels[0]), Said(N, reply_n, labels[1])))
    return await turn_of(s, ctx, JUDGE, [UserMessage(content=prompt, source="user")], "judge", 1,
                         document=(ClaimDocuments(s.templates()).judged, content), **record)


async def judge_again(s: S2madScenario, ctx: UnitContext, transcript: Transcript) -> Answer:
    """The judge asked anew from the debaters' last recorded turns (and labels), as it would
    have seen them."""
    turns = [m for m in transcript.messages if m.role in (P, N)]
    last = {m.role: m.content for m in turns if not m.action.endswith("_answer")}
    labels = {m.role: m.decision for m in turns if m.decision in s.labels}
    _, said = await ask_judge(s, ctx, transcript.started.inputs.get("claim", ""), last.get(P, ""), last.get(N, ""),
                              (labels.get(P), labels.get(N)), speaker=f"{JUDGE} (rescored)")
    return said
