"""The decision conference (Heller et al. 2025) as a protocol: an AutoGen SelectorGroupChat.

The selector is the pure conference policy (moot.speaker_selection.conference, Algorithm 1);
SelectorGroupChat's own LLM selection is disabled by an empty ReplayChatCompletionClient, so any
fallback fails loudly. Each turn's call and events are appended to the transcript before the next
turn starts. A conference cut short continues from its last complete turn (conference_turns).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from autogen_agentchat.base import ChatAgent, TaskResult, Team
from autogen_agentchat.conditions import FunctionalTermination, MaxMessageTermination
from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_agentchat.teams import SelectorGroupChat
from autogen_ext.models.replay import ReplayChatCompletionClient

from moot.agents.conference.agent import USER, ConferenceAgent, said_of, to_turns
from moot.agents.conference.setup import ConferenceSetup
from moot.agents.conference.human import SeatedConferenceAgent
from moot.kit import RunResults, UnitContext, quiet_runtime_telemetry
from moot.protocols.conference.events import EVENT_TYPES, TopicClosed
from moot.contract.protocol import Outcome, Protocol
from moot.contract.report import ReportPart, Reporting
from moot.contract.units import scenario_runs
from moot.protocols.conference.schema import Scenario
from moot.protocols.conference.rating import rateables
from moot.protocols.conference.rescore import DECIDERS, rescore
from moot.protocols.conference.setup import setup_of
from moot.protocols.conference.turns import resume_point, turn_events
from moot.protocols.conference.metrics import METRICS
from moot.protocols.conference.vary import VARY
from moot.protocols.conference.views import ConferenceView
from moot.speaker_selection.conference import ConferencePlan, Turn, next_step, walk

quiet_runtime_telemetry()  # group chats here need no per-message spans (moot/kit/_telemetry.py)


def build_agents(scenario: Scenario, setup: ConferenceSetup,
                 ctx: UnitContext) -> list[ConferenceAgent | SeatedConferenceAgent]:
    """One AutoGen agent per declared role, asking its model through the unit's context; a role a
    person takes (`--human`) is a user proxy at its seat, its model standing by."""
    agents: list[ConferenceAgent | SeatedConferenceAgent] = []
    for role, spec in scenario.agents():
        agent = ConferenceAgent(spec.name, role, spec.persona, ctx, setup, spec.prompt)
        seat = ctx.seat(spec.name)
        resumed = ctx.prior is not None and bool(ctx.prior.messages)
        agents.append(SeatedConferenceAgent(agent, seat, resumed) if seat is not None else agent)
    return agents


def seats(scenario: Scenario) -> dict[str, tuple[str, ...]]:
    """The seats a person may take: each agent by name, each role, and `participants` (the
    assessor's is no seat: its answer is a quote per reference item, not a turn)."""
    cast = [(role, a.name) for role, a in scenario.agents() if role != "assessor"]
    found: dict[str, tuple[str, ...]] = {name: (name,) for _, name in cast}
    for role in dict.fromkeys(role for role, _ in cast):
        found.setdefault(role, tuple(name for r, name in cast if r == role))
    found.setdefault("participants", found["participant"])
    return found


def selector_for(plan: ConferencePlan) -> Callable[[Sequence[object]], str]:
    """The AutoGen selector_func: the pure policy; it never returns None (no LLM fallback)."""

    def select(thread: Sequence[object]) -> str:
        step = next_step(plan, to_turns(thread))
        if step.speaker is None:
            raise RuntimeError("the conference is closed but the group chat asked for a speaker")
        return step.speaker

    return select


def _closed(messages: Sequence[object]) -> bool:
    return any(isinstance(m, BaseChatMessage) and m.metadata.get("action") == "close" for m in messages)


async def run(scenario: Scenario, ctx: UnitContext) -> Outcome:
    """Run (or continue) the conference; every turn is recorded as it happens."""
    setup = setup_of(scenario)
    plan = setup.plan
    point = resume_point(ctx.prior, setup)
    if point.missing:
        ctx.record(*point.missing)
    agents = build_agents(scenario, setup, ctx)
    by_name = {a.name: a for a in agents}
    turns, said = list(point.turns), list(point.said)
    task = [TextMessage(content=scenario.task_message(), source=USER), *point.messages]
    participants: list[ChatAgent | Team] = list(agents)
    team = SelectorGroupChat(
        participants, model_client=ReplayChatCompletionClient([]), selector_func=selector_for(plan),
        allow_repeated_speaker=True,
        termination_condition=FunctionalTermination(_closed) | MaxMessageTermination(scenario.limits.max_messages + 1))
    reason, seen = "no stop reason", 0
    try:
        async for item in team.run_stream(task=task, cancellation_token=ctx.cancellation):
            if isinstance(item, TaskResult):
                reason = item.stop_reason or reason
                continue
            seen += 1
            if seen > len(task) and isinstance(item, BaseChatMessage):
                turns += to_turns([item])
                steps = walk(plan, turns)
                ctx.record_replies(by_name[item.source].last_calls,
                                   *turn_events(item, steps[-2], steps[-1], len(turns), setup, said))
                said.append(said_of(item, steps[-2], len(turns), setup.reading))
    except Exception:
        failed = next((a.failure for a in agents if a.failure), None)
        if failed is not None:
            raise failed from None
        raise
    return _ending(scenario, plan, turns, reason, ctx)


def _ending(scenario: Scenario, plan: ConferencePlan, turns: Sequence[Turn], reason: str, ctx: UnitContext) -> Outcome:
    closed = {e.topic: e for e in ctx.events if isinstance(e, TopicClosed)}
    summary = {"topics": [{"topic": t, "rounds": closed[t].rounds, "closed_by": closed[t].closed_by}
                          for t in sorted(closed)]}
    if next_step(plan, turns).speaker is None:
        return Outcome(stop_reason="all topics closed", summary=summary)
    if "Maximum number of messages" in reason:
        return Outcome(stop_reason=f"max_messages ({scenario.limits.max_messages}) reached", summary=summary)
    return Outcome(status="failed", stop_reason=f"stopped early: {reason}", summary=summary)


def report_part(runs: Sequence[RunResults], plots: Path) -> ReportPart:
    """Its part of a report (moot.protocols.conference.report) with its plots drawn into `plots`
    (moot.protocols.conference.plots): both imported only by a report (matplotlib)."""
    from moot.protocols.conference.plots import conference_plots
    from moot.protocols.conference.report import load_conference_run, part

    conferences = [load_conference_run(r.source, r.ref) for r in runs]
    return part(conferences, conference_plots(conferences, plots))


PROTOCOL = Protocol(
    name="conference",
    title="Decision conference",
    paper="Heller et al. 2025, Finding Common Ground: agreement detection in simulated decision conferences",
    scenario=Scenario,
    policy=next_step,
    run=run,
    example="drug_policy",
    durable=True,
    deciders=DECIDERS,
    rescore=rescore,
    events=EVENT_TYPES,
    view=ConferenceView,
    units=scenario_runs("conferences", "conference"),
    vary=VARY,
    metrics=METRICS,
    report=Reporting(part=report_part),
    seats=seats,
    rating=rateables,
    scripted=lambda s: {},  # a scripted judge follows its script's tokens (moot.models.backends.scripted.client)
)
