"""run.json: what a run folder holds, so a rerun continues the same run and reports cite it.

Identity (compared on every invocation): the protocol, the validated scenario's content hash
(its prompt templates included, moot's defaults too; a comment or layout edit is the same run;
folders whose content was hashed otherwise compare the file's sha256), the dataset file's sha256,
and the models. Anything else only describes the run: paths, the scenario (a copy, its prompt
overrides included) and `prompts` (every template its roles are sent, defaults included), labels,
the headline metric, the rows the dataset loader skipped (by reason), the planned unit count,
dates, and `environment` (moot.engine.provenance: moot's version and commit, library versions,
model files' sha256). A different scenario or dataset is refused; other models are refused unless
`--allow-model-change` is given, which is recorded in `model_changes`. The first invocation's
environment stays; a later one in another is added to `environment_changes` (a folder older than
environments gets its first there).

After each invocation run.json also keeps `pacing`: each endpoint's limit on calls in flight as it
adapted to the server (moot.models.pace: ceiling, lowest, last, 429s, timeouts, cuts, its course),
the latest invocation's; and `spend_usd`: what the run's calls cost in all, every invocation's
(priced models only, moot.models.prices), which a cost limit counts (moot.models.budget).
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Optional

from moot.engine.folder import RunFolder
from moot.saved.files import RunFolderError
from moot.engine.plan import Plan
from moot.engine.provenance import environment
from moot.models.engine import EngineStats
from moot.scenario.load import same_scenario
from moot.scenario.blocks import ScenarioBase

FOLDER_VERSION = 2
FILE_KEY, CONTENT_KEY = "scenario_sha256", "scenario_content_sha256"
WHAT = {"scenario": "another scenario", "dataset_sha256": "another dataset", "models": "other models",
        "protocol": "another protocol"}
LATEST = ("planned_units", "limit", "last_invoked", "skipped_rows")  # follow each invocation
FIRST = ("created", "environment", "prompts")  # what the first invocation ran with: never back-filled


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def describe_run(protocol: str, scenario: ScenarioBase, scenario_path: str, metric: Optional[str], plan: Plan,
                 limit: Optional[int], models: Mapping[str, str]) -> dict[str, Any]:
    """run.json's description of a run (module docstring); `models`: role -> spec, for the model
    files the environment names."""
    from moot.version import __version__

    info: dict[str, Any] = {
        "folder_version": FOLDER_VERSION, "protocol": protocol, "scenario_path": scenario_path,
        "scenario": scenario.model_dump(mode="json", exclude={"input"}), "prompts": scenario.templates(),
        "labels": scenario.label_set(), "headline_metric": metric,
        "planned_units": plan.total, "limit": limit, "skipped_rows": plan.skipped,
        "created": now(), "last_invoked": now(), "moot_version": __version__, "environment": environment(models),
    }
    if plan.dataset is not None and plan.spec is not None:
        info.update(dataset_path=str(plan.dataset), data_file=str(plan.spec.data_path),
                    dataset_spec_sha256=hashlib.sha256(Path(plan.dataset).read_bytes()).hexdigest())
    return info


def record_session(folder: RunFolder, stats: EngineStats) -> None:
    """What this invocation adds to run.json once its units are done (module docstring)."""
    before = folder.meta()
    if before is None or not (stats.paces or stats.cost):
        return
    after = {**before, "pacing": {pace.name: pace.record() for pace in stats.paces}}
    if stats.cost:
        after["spend_usd"] = round(float(before.get("spend_usd") or 0.0) + stats.cost, 6)
    folder.write_meta(after)


def check_identity(folder: RunFolder, identity: Mapping[str, Any], info: Mapping[str, Any],
                   allow_model_change: bool = False) -> None:
    """Write run.json on first use; refuse a folder that holds a different run (module docstring)."""
    before = folder.meta()
    if before is None:
        folder.write_meta({**identity, **info})
        return
    changed = _changed(before, identity)
    models_changed = "models" in changed
    if models_changed and allow_model_change:
        changed.remove("models")
    if changed:
        hint = ("; pass --allow-model-change to continue it with these models (recorded)"
                if changed == ["models"] else "; choose another --out, or delete the folder")
        what = ", ".join(WHAT.get(k, f"another {k}") for k in changed)
        raise RunFolderError(f"{folder.path} holds a run with {what}{hint}")
    after = {**{k: v for k, v in info.items() if k not in FIRST}, **before,
             **{k: info[k] for k in LATEST if k in info}}
    if CONTENT_KEY in identity:
        after[CONTENT_KEY] = identity[CONTENT_KEY]
    if "environment" in info and info["environment"] != _latest_environment(before):
        after["environment_changes"] = [*before.get("environment_changes", []),
                                        {"at": now(), "to": info["environment"]}]
    if models_changed:
        after["model_changes"] = [*before.get("model_changes", []),
                                  {"at": now(), "from": before.get("models"), "to": identity["models"]}]
        after["models"] = identity["models"]
    if after != before:
        folder.write_meta(after)


def _latest_environment(before: Mapping[str, Any]) -> Any:
    """The environment the run was last continued in (None: a folder older than environments)."""
    changes = before.get("environment_changes") or []
    return changes[-1].get("to") if changes else before.get("environment")


def _changed(before: Mapping[str, Any], identity: Mapping[str, Any]) -> list[str]:
    changed = [k for k in identity if k not in (FILE_KEY, CONTENT_KEY) and before.get(k) != identity[k]]
    if FILE_KEY in identity and not same_scenario(before.get(FILE_KEY), before.get(CONTENT_KEY),
                                                  identity[FILE_KEY], identity.get(CONTENT_KEY, "")):
        changed.insert(0, "scenario")
    return changed
