"""Running a per-item protocol on one item: transcript header, the protocol, its outcome.

A model call that fails every retry ends the item as failed (an `item_failed` event with the
cause); the batch does not record a result for it, so the next run retries it, and the replies
it already got come from the cache.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Optional

from moot.models.calls import ModelCallError, describe
from moot.protocols.context import Engine, RoleModel, StageContext
from moot.protocols.record import ItemFailed, ItemFinished, ItemRecorder, ItemStarted


@dataclass
class Outcome:
    """What a protocol's run_item returns: the label, why, the deciding reply and who said what."""

    prediction: str
    explanation: str
    raw: str
    contributions: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ItemResult:
    id: str
    status: str  # "completed" | "failed"
    prediction: Optional[str]
    gold: Optional[str]
    explanation: str
    transcript: str
    cause: str = ""

    def record(self) -> dict[str, Any]:
        return {"id": self.id, "prediction": self.prediction, "gold": self.gold,
                "explanation": self.explanation, "transcript": self.transcript}


def role_models(proto: ModuleType, scenario) -> dict[str, RoleModel]:
    settings = scenario.generation.model_dump()
    models = {role: RoleModel(scenario.model_for(role), settings) for role in proto.roles(scenario)}
    models["default"] = RoleModel(scenario.models.get("default", "local"), settings)
    return models


async def run_one(proto: ModuleType, scenario, scenario_path: Path, scenario_sha: str, engine: Engine,
                  item, transcript: Path, listener: Optional[Callable] = None) -> ItemResult:
    """Run one item and write its transcript; never raises for a failed model call."""
    models = role_models(proto, scenario)
    recorder = ItemRecorder(transcript, listener)
    started = time.monotonic()
    inputs = {k: v for k, v in vars(item).items() if k not in ("id", "gold") and v is not None}
    try:
        recorder.record(ItemStarted(protocol=proto.NAME, scenario_path=str(scenario_path),
                                    scenario_sha256=scenario_sha, item_id=item.id, inputs=inputs,
                                    gold=item.gold, models={r: m.spec for r, m in models.items()}))
        ctx = StageContext(engine, models, recorder)
        try:
            outcome = await proto.run_item(scenario, ctx, item)
        except ModelCallError as exc:
            role = ctx.calls[-1].role if ctx.calls else None
            recorder.record(ItemFailed(stage="model_call", role=role, cause=exc.cause, attempts=exc.attempts))
            return ItemResult(item.id, "failed", None, item.gold, "", str(transcript), exc.cause)
        except Exception as exc:  # noqa: BLE001 - recorded; the batch goes on with other items
            recorder.record(ItemFailed(stage="run", cause=describe(exc)))
            return ItemResult(item.id, "failed", None, item.gold, "", str(transcript), describe(exc))
        recorder.record(ItemFinished(prediction=outcome.prediction, explanation=outcome.explanation,
                                     raw=outcome.raw, wall_s=round(time.monotonic() - started, 3)))
        return ItemResult(item.id, "completed", outcome.prediction, item.gold, outcome.explanation,
                          str(transcript))
    finally:
        recorder.close()
