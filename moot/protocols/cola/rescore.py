"""Re-scoring a COLA item (`moot score --role judger=...`) from its transcript: only the judger is asked again."""

from __future__ import annotations

from moot.contract.protocol import Rescore, Rescored
from moot.kit import UnitContext, last_call
from moot.protocols.cola.item import Item, labels_of
from moot.protocols.cola.judger import judge
from moot.protocols.cola.schema import EXPERTS, JUDGER, ColaScenario, debater_name


async def rescore(s: ColaScenario, job: Rescore, ctx: UnitContext) -> Rescored:
    """The judger again with another model, on what the analysts and debaters said (as recorded):
    nobody else is asked again."""
    if last_call(job.transcript, JUDGER) is None:
        raise ValueError("the transcript has no judger call to send again")
    given = job.transcript.started.inputs
    target = str(given.get("target", ""))
    fields = {"text": str(given.get("text", "")), "target": target,
              "role": str(given.get("role") or s.input.role or s.domain_role.for_target(target))}
    said = [m for m in job.transcript.messages if m.role != JUDGER]
    by_debater = {debater_name(lab): lab for lab in s.labels}
    item = Item(s, s.templates(), fields, {m.role: m.content for m in said if m.role in EXPERTS},
                {by_debater[m.role]: m.content for m in said if m.role in by_debater})
    stage = "baseline" if s.baseline else "conclusion"
    return Rescored(await judge(ctx, item, labels_of(s), stage, speaker=f"{JUDGER} (rescored)"))
