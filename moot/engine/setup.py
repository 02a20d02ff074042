"""Which model plays each role, and the `run_started` record of a unit.

`--model SPEC` (every role) and `--model KEY=SPEC` (a role, an agent or a group such as
`participants` or `debaters`) mean the same for every protocol and beat the scenario's choices.
"""

from __future__ import annotations

import platform
import secrets
from functools import lru_cache
from importlib import metadata
from typing import Any, Mapping, Optional, Sequence

from moot.log.events import RunStarted
from moot.models.engine import RoleModel
from moot.models.spec import parse_spec
from moot.contract.protocol import Protocol
from moot.kit._context import Unit
from moot.errors import UsageError, nearest
from moot.scenario.blocks import ScenarioBase


def model_keys(scenario: ScenarioBase) -> list[str]:
    """Every key `--model KEY=SPEC` accepts for this scenario, `default` first."""
    keys = ["default"]
    for role in scenario.roles():
        keys += [k for k in scenario.model_keys(role) if k not in keys]
    return keys


def parse_overrides(scenario: ScenarioBase, overrides: Sequence[str]) -> dict[str, str]:
    """`SPEC` / `KEY=SPEC` items as {key: spec} (key "" for all roles), each spec checked."""
    keys, parsed = model_keys(scenario), {}
    for item in overrides:
        key, sep, spec = item.partition("=")
        if not sep:
            key, spec = "", item
        key, spec = key.strip(), spec.strip()
        if key == "participant":
            key = "participants"
        if key and key not in keys:
            raise UsageError(f"--model {item}: unknown role or agent {key!r}{nearest(key, keys)} "
                             f"(allowed: {', '.join(keys)})")
        try:
            parse_spec(spec)
        except ValueError as exc:
            raise UsageError(f"--model {item}: {exc}") from None
        parsed[key] = spec
    return parsed


def resolve_models(scenario: ScenarioBase, overrides: Sequence[str] = ()) -> dict[str, str]:
    """Role -> model spec: a command-line key (most specific first, then a bare SPEC) beats the scenario."""
    given = parse_overrides(scenario, overrides)
    resolved = {}
    for role in scenario.roles():
        chosen = next((given[k] for k in scenario.model_keys(role) if k in given), None)
        resolved[role] = chosen or given.get("default") or given.get("") or scenario.model_for(role)
    try:
        scenario.check_models(resolved)
    except ValueError as exc:
        raise UsageError(f"--model: {exc}") from None
    return resolved


def role_models(scenario: ScenarioBase, specs: Mapping[str, str]) -> dict[str, RoleModel]:
    """RoleModel (spec + generation settings) of every role."""
    return {role: RoleModel(spec, scenario.generation_for(role).model_dump()) for role, spec in specs.items()}


@lru_cache(maxsize=1)
def versions() -> dict[str, str]:
    """The versions a run records (read once per process: reading package metadata is slow)."""
    found = {"python": platform.python_version()}
    for dist in ("moot", "autogen-agentchat", "autogen-ext", "llama-cpp-python", "openai", "ollama"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return found


def started_event(protocol: Protocol[Any], unit: Unit, scenario_path: str, scenario_sha256: str,
                  content_sha256: str, models: Mapping[str, RoleModel], backends: Mapping[str, Any],
                  seed: Optional[int] = None) -> RunStarted:
    settings = {role: dict(model.settings) for role, model in models.items()}
    return RunStarted(
        run_id=secrets.token_hex(8), protocol=protocol.name, scenario_path=scenario_path,
        scenario_sha256=scenario_sha256, scenario_content_sha256=content_sha256,
        scenario=unit.scenario.model_dump(mode="json"), models={r: m.spec for r, m in models.items()},
        settings={**settings, "backends": dict(backends)}, seed=seed, versions=dict(versions()), unit=unit.id,
        inputs=dict(unit.inputs), gold=unit.gold, variant=dict(unit.variant),
        event_versions={t.name: t.version for t in protocol.events},
    )
