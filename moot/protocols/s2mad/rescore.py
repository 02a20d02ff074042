"""S2MAD's deciding role again with another model (`moot score`): the judge, or the one agent."""

from __future__ import annotations

from typing import Optional

from moot.contract.protocol import Outcome, Rescore, Rescored
from moot.kit import Call, Transcript, UNPARSED, UnitContext, recorded_messages, resend
from moot.protocols.items.document import in_document
from moot.protocols.s2mad.document import AGENT, JUDGE
from moot.protocols.s2mad.judge import judge_again
from moot.protocols.s2mad.schema import S2madScenario
from moot.protocols.s2mad.turns import Answer, answer, labels_of


async def rescore(s: S2madScenario, job: Rescore, ctx: UnitContext) -> Rescored:
    """The deciding role again with another model, on its recorded prompt: the judge, or the one
    agent of w/o Debate and the vanilla baseline. An item both debaters settled by consensus had
    no judge (Alg. 1) and keeps its result; with `every` the judge decides it too, from the
    debaters' last recorded replies, as it would have seen them."""
    agent = last_reasoning(job.transcript, AGENT)
    if agent is not None or JUDGE not in job.roles:
        if agent is None or AGENT not in job.roles:
            return Rescored()
        said = await resent(s, ctx, agent)
        return Rescored(Outcome(said.label or UNPARSED, "the agent's answer" + said.note, said.raw,
                                decided_by=said.by(AGENT)))
    call = last_reasoning(job.transcript, JUDGE)
    if call is not None and not in_document(ctx, JUDGE):
        said = await resent(s, ctx, call)
    elif call is not None or job.every:  # a base model's judge document is rebuilt from the debaters' last turns
        said = await judge_again(s, ctx, job.transcript)
    else:
        return Rescored()
    return Rescored(Outcome(said.label or UNPARSED, "judge's determination" + said.note, said.raw,
                            decided_by=said.by(JUDGE)))


def last_reasoning(transcript: Transcript, role: str) -> Optional[Call]:
    """The role's last reasoning call (not the follow-up asking for its answer)."""
    found = [c for c in transcript.calls if c.role == role and not c.stage.endswith("_answer")]
    return found[-1] if found else None


async def resent(s: S2madScenario, ctx: UnitContext, call: Call) -> Answer:
    messages = recorded_messages(call)
    reply = await resend(ctx, call, decide=labels_of(s).decide)
    return await answer(s, ctx, call.role, messages, reply, call.stage, 1)
