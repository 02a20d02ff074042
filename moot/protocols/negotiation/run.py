"""The run of one text: a negotiation and its role-flipped twin, concurrently, combined by the
paper's rules (outcome.combine); conflicting decisions bring in the third LLM: four more
negotiations and a six-way vote (outcome.vote). A re-score casts the third LLM anew."""

from __future__ import annotations

import asyncio

from moot.contract.protocol import Outcome, Rescore, Rescored
from moot.kit import UnitContext
from moot.protocols.negotiation.knn import neighbours
from moot.protocols.negotiation.negotiator import ItemInput, Negotiator
from moot.protocols.negotiation.outcome import Result, combine, outcome_of, results_of, vote
from moot.protocols.negotiation.schema import NegotiationScenario

PAIRS = (("first", "second"), ("second", "first"))
THIRD_PAIRS = (("third", "first"), ("first", "third"), ("third", "second"), ("second", "third"))


async def run(s: NegotiationScenario, ctx: UnitContext) -> Outcome:
    """One text: a negotiation, its role-flipped twin, and the third LLM's vote on a conflict."""
    return await run_item(s, ctx, ItemInput(ctx.unit.id, ctx.inputs["text"]))


async def run_item(s: NegotiationScenario, ctx: UnitContext, item: ItemInput) -> Outcome:
    n = Negotiator(s, ctx, item, neighbours(s, item.text))
    pair = await asyncio.gather(*(n.negotiate(g, d) for g, d in PAIRS))
    decision, conflict = combine(*pair)
    if conflict and "third" in s.models:
        return await third_vote(n, list(pair))
    how = ("conflict between the negotiations and no third LLM" if conflict
           else "negotiation and role-flipped negotiation")
    return outcome_of(decision, how + n.read_how(), list(pair))


async def third_vote(n: Negotiator, pair: list[Result]) -> Outcome:
    """The third LLM's four negotiations, then the six-way vote."""
    results = pair + list(await asyncio.gather(*(n.negotiate(g, d) for g, d in THIRD_PAIRS)))
    return outcome_of(vote(results), "six-way vote with the third LLM" + n.read_how(), results)


async def rescore(s: NegotiationScenario, job: Rescore, ctx: UnitContext) -> Rescored:
    """The third LLM's vote again, with another model as the third LLM: on an item whose
    negotiation and role-flipped negotiation conflict (with `every`: on every item) its four
    negotiations run anew and the six-way vote decides. The first two negotiations are read from
    the recorded outcome, never re-run; calls the transcript already holds (demonstrations of the
    first and second LLM) are served from it."""
    recorded = job.transcript.outcome
    pair = [r for r in results_of(recorded.raw or "" if recorded else "") if (r.generator, r.discriminator) in PAIRS]
    if len(pair) != 2:
        raise ValueError("the recorded outcome does not name both negotiations (first->second, second->first)")
    _, conflict = combine(*pair)
    if not conflict and not job.every:
        return Rescored()
    text = job.transcript.started.inputs.get("text", "")
    n = Negotiator(s, ctx, ItemInput(ctx.unit.id, text), neighbours(s, text))
    return Rescored(await third_vote(n, pair))
