"""Setting up a conference run: resolve models, open (or resume) the transcript, build the runner.

Everything that can reject the user's input happens before the transcript file is created,
so bad input leaves nothing half-written.
"""

from __future__ import annotations

import os
import platform
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Optional, Sequence

from moot.models.factory import BackendOptions
from moot.models.spec import parse_spec
from moot.resume import ResumePoint, resume_point
from moot.runner import ConferenceRunner, Listener, build_agents, plan_of
from moot.scenario import ROLE_KEYS, Scenario, load_scenario, scenario_content_hash, scenario_hash
from moot.transcript import RunResumed, RunStarted, TranscriptWriter


class UsageError(ValueError):
    """Bad command-line input; one line."""


@dataclass
class RunRequest:
    scenario_path: Path
    models: Sequence[str] = ()
    out: Optional[Path] = None
    resume: Optional[Path] = None
    backends: BackendOptions = field(default_factory=BackendOptions)


def resolve_models(scenario: Scenario, overrides: Sequence[str]) -> dict[str, str]:
    """Agent name -> spec. Command line (`SPEC` for all, `ROLE=SPEC` or `AGENT=SPEC`) beats YAML."""
    default, keyed = None, {}
    names = {a.name for _, a in scenario.agents()}
    for item in overrides:
        key, sep, spec = item.partition("=")
        if not sep:
            key, spec = "", item
        key = "participants" if key == "participant" else key
        if key and key not in ROLE_KEYS and key not in names:
            raise UsageError(f"--model {item}: unknown role or agent {key!r} "
                             f"(roles: {', '.join(ROLE_KEYS)}; agents: {', '.join(sorted(names))})")
        try:
            parse_spec(spec)
        except ValueError as exc:
            raise UsageError(f"--model {item}: {exc}") from None
        if key:
            keyed[key] = spec
        else:
            default = spec
    resolved = {}
    for role, agent in scenario.agents():
        role_key = "participants" if role == "participant" else role
        resolved[agent.name] = (keyed.get(agent.name) or keyed.get(role_key) or default
                                or scenario.model_for(role, agent))
    return resolved


def backend_options(scenario: Scenario, cli: BackendOptions) -> BackendOptions:
    """Command-line endpoints win over the scenario's `backends:` section."""
    b = scenario.backends
    api_key = cli.openai_api_key
    return BackendOptions(
        openai_base_url=cli.openai_base_url or b.openai.base_url,
        openai_api_key=api_key or os.environ.get(b.openai.api_key_env),
        ollama_host=cli.ollama_host or b.ollama.host,
        local_n_ctx=b.local.n_ctx, local_n_threads=b.local.n_threads,
    )


def default_transcript_path(scenario_path: Path) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return Path("transcripts") / f"{scenario_path.stem}-{stamp}-{secrets.token_hex(2)}.jsonl"


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for dist in ("moot", "autogen-agentchat", "autogen-ext", "llama-cpp-python", "openai", "ollama"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return found


def prepare(request: RunRequest, listener: Listener, clients: Optional[dict] = None,
            scenario: Optional[Scenario] = None) -> ConferenceRunner:
    """Validate everything, then create or reopen the transcript and return a ready runner.
    `scenario` is the already-loaded scenario file, when the caller has read it."""
    scenario = scenario or load_scenario(request.scenario_path)
    models = resolve_models(scenario, request.models)
    options = backend_options(scenario, request.backends)
    sha, content_sha = scenario_hash(request.scenario_path), scenario_content_hash(scenario)
    plan = plan_of(scenario)
    if request.resume:
        point = resume_point(request.resume, sha, content_sha, plan)
        path = request.resume
    else:
        point, path = ResumePoint(), request.out or default_transcript_path(request.scenario_path)
        if path.exists():
            raise UsageError(f"--out {path}: file exists; choose another path or --resume it")
    agents = build_agents(scenario, models, options, clients)
    writer = TranscriptWriter(path, point.next_seq)
    runner = ConferenceRunner(scenario, agents, writer, point, listener)
    if request.resume:
        runner.record(RunResumed(turns_kept=len(point.turns), models=models))
    else:
        runner.record(_started(request, scenario, models, options, sha, content_sha))
    return runner


def _started(request: RunRequest, scenario: Scenario, models: dict[str, str],
             options: BackendOptions, sha: str, content_sha: str) -> RunStarted:
    settings = {name: scenario.generation_for(agent).model_dump() for _, agent in scenario.agents()
                for name in [agent.name]}
    return RunStarted(
        run_id=secrets.token_hex(8), protocol=scenario.protocol,
        scenario_path=str(request.scenario_path), scenario_sha256=sha,
        scenario_content_sha256=content_sha,
        scenario=scenario.model_dump(mode="json"), models=models,
        settings={**settings, "backends": options.public()},
        seed=scenario.generation.seed, versions=versions(),
    )
