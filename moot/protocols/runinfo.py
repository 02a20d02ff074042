"""What a batch run's run.json records besides its identity, so a report can cite every number.

Identity keys (scenario/dataset hashes, models) decide whether a directory holds the same run;
these keys only describe it: protocol, scenario file and its settings, label set and headline
metric, dataset spec and data file (the data file's sha256 is in the identity), the --limit
and the number of items planned, and dates (first invocation `created`, latest `last_invoked`).
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def run_info(proto, scenario, scenario_path: Path, dataset_path: Path, spec, limit: Optional[int],
             planned: int) -> dict[str, Any]:
    """The descriptive part of run.json (see moot.protocols.batch.check_run_dir)."""
    from moot import __version__

    return {
        "protocol": proto.NAME,
        "scenario_path": str(scenario_path),
        "scenario": scenario.model_dump(mode="json", exclude={"input", "prompts"}),
        "labels": list(scenario.labels),
        "metric": scenario.headline_metric(),
        "dataset_path": str(dataset_path),
        "dataset_spec_sha256": hashlib.sha256(Path(dataset_path).read_bytes()).hexdigest(),
        "data_file": str(spec.data_path),
        "limit": limit,
        "planned_items": planned,
        "created": _now(),
        "last_invoked": _now(),
        "moot_version": __version__,
    }
