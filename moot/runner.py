"""Run a decision conference as an AutoGen SelectorGroupChat and record it as it happens.

The selector is the pure conference policy (speaker_selection); SelectorGroupChat's own LLM
selection is disabled by an empty ReplayChatCompletionClient, so any fallback fails loudly.
Each turn's events are appended to the transcript before the next turn starts; a failed
model call ends the run as failed with its cause, and `resume` continues from the last
complete turn of a transcript without repeating it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from autogen_agentchat.base import TaskResult
from autogen_agentchat.conditions import FunctionalTermination, MaxMessageTermination
from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_agentchat.teams import SelectorGroupChat
from autogen_core import CancellationToken
from autogen_ext.models.replay import ReplayChatCompletionClient

from moot.agents.conference import USER, ConferenceAgent, ConferenceSetup, to_turns
from moot.agents.prompts import default_templates
from moot.events import turn_events
from moot.models.calls import RetryPolicy, describe
from moot.models.factory import BackendOptions, build_client
from moot.resume import ResumePoint
from moot.scenario import Scenario
from moot.summary import totals_of
from moot.transcript import Error, RunFinished, TranscriptWriter
from moot.speaker_selection.conference import ConferencePlan, next_step, walk

Listener = Callable[[list], None]


def plan_of(scenario: Scenario) -> ConferencePlan:
    return ConferencePlan(
        moderator=scenario.moderator.name,
        participants=tuple(p.name for p in scenario.participants),
        judge=scenario.judge.name if scenario.judge else None,
        evaluator=scenario.evaluator.name if scenario.evaluator else None,
        topic_count=len(scenario.topics), max_rounds=scenario.limits.max_rounds_per_topic,
        agreement=scenario.routing.agreement, on_more_debate=scenario.routing.on_more_debate,
    )


def setup_of(scenario: Scenario) -> ConferenceSetup:
    templates = {**default_templates("conference"), **scenario.prompts}
    return ConferenceSetup(plan_of(scenario), scenario.title, scenario.task, tuple(scenario.topics),
                           templates, scenario.limits.context_messages)


def build_agents(scenario: Scenario, models: dict[str, str], options: BackendOptions,
                 clients: Optional[dict] = None) -> list[ConferenceAgent]:
    """One AutoGen agent per declared role; `clients` may supply ready clients (tests)."""
    setup = setup_of(scenario)
    retry = RetryPolicy(scenario.retry.attempts, scenario.retry.backoff_s, scenario.retry.timeout_s)
    agents = []
    for role, spec in scenario.agents():
        settings = scenario.generation_for(spec).model_dump()
        client = (clients or {}).get(spec.name) or build_client(models[spec.name], settings, options)
        agents.append(ConferenceAgent(spec.name, role, spec.persona, client, setup,
                                      models[spec.name], retry, spec.prompt))
    return agents


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


@dataclass
class RunOutcome:
    status: str
    stop_reason: str
    path: Path


class ConferenceRunner:
    """Drives one run (fresh or resumed) and writes its transcript."""

    def __init__(self, scenario: Scenario, agents: list[ConferenceAgent], writer: TranscriptWriter,
                 resume: ResumePoint, listener: Listener = lambda events: None):
        self.scenario, self.agents, self.writer = scenario, agents, writer
        self.resume, self.listener = resume, listener
        self.plan = plan_of(scenario)
        self.turns = list(resume.turns)
        self.events = list(resume.events)
        self.outcome: Optional[RunOutcome] = None  # set when run() has recorded run_finished

    def _team(self) -> SelectorGroupChat:
        limit = MaxMessageTermination(self.scenario.limits.max_messages + 1)
        return SelectorGroupChat(
            self.agents, model_client=ReplayChatCompletionClient([]),
            selector_func=selector_for(self.plan), allow_repeated_speaker=True,
            termination_condition=FunctionalTermination(_closed) | limit,
        )

    def _task(self) -> list[BaseChatMessage]:
        task = TextMessage(content=f"{self.scenario.title}\n\n{self.scenario.task}", source=USER)
        return [task] + [m for m in self.resume.messages]

    async def run(self) -> RunOutcome:
        started = time.monotonic()
        task = self._task()
        status, reason = "completed", "no stop reason"
        stop = CancellationToken()
        interrupted = _on_ctrl_c(stop)
        try:
            seen = 0
            async for item in self._team().run_stream(task=task, cancellation_token=stop):
                if isinstance(item, TaskResult):
                    reason = item.stop_reason or reason
                    continue
                seen += 1
                if seen > len(task) and isinstance(item, BaseChatMessage):
                    self._record(item)
        except (Exception, asyncio.CancelledError, KeyboardInterrupt) as exc:  # noqa: BLE001
            if interrupted() or not isinstance(exc, Exception):
                stop.cancel()
                status, reason = "interrupted", "interrupted by the user"
            else:
                status, reason = "failed", self._record_error(exc)
        finally:
            _restore_ctrl_c()
        if status == "completed":
            status, reason = self._judge_outcome(reason)
        finished = RunFinished(status=status, stop_reason=reason, wall_s=round(time.monotonic() - started, 3),
                               totals=totals_of(self.events))
        self.record(finished)
        self.outcome = RunOutcome(status, reason, self.writer.path)
        return self.outcome

    def _judge_outcome(self, reason: str) -> tuple[str, str]:
        if next_step(self.plan, self.turns).speaker is None:
            return "completed", "all topics closed"
        if "Maximum number of messages" in reason:
            return "completed", f"max_messages ({self.scenario.limits.max_messages}) reached"
        return "failed", f"stopped early: {reason}"

    def _record(self, message: BaseChatMessage) -> None:
        steps = walk(self.plan, self.turns + to_turns([message]))
        self.turns = self.turns + to_turns([message])
        self.record(*turn_events(message, steps[-2], steps[-1], len(self.turns)))

    def _record_error(self, exc: BaseException) -> str:
        failed = next((a.failure for a in self.agents if a.failure), None)
        speaker = next_step(self.plan, self.turns).speaker
        if failed:
            self.record(Error(speaker=speaker, stage="model_call", cause=failed.cause, attempts=failed.attempts))
            return f"error: {failed.cause}"
        cause = describe(exc)
        self.record(Error(speaker=speaker, stage="run", cause=cause))
        return f"error: {cause}"

    def record(self, *events) -> None:
        self.writer.append(*events)
        self.events.extend(events)
        self.listener(list(events))


def _on_ctrl_c(stop: CancellationToken) -> Callable[[], bool]:
    """Ctrl-C cancels the group chat (AutoGen's run_stream otherwise waits for the whole team to
    go idle, i.e. the conference would go on unrecorded); a second Ctrl-C exits at once, which
    is safe because every recorded turn is already fsynced. Returns "was it interrupted?"."""
    hits = []

    def handler() -> None:
        hits.append(1)
        if len(hits) > 1:
            os._exit(130)
        stop.cancel()

    try:
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, handler)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
        pass
    return lambda: bool(hits)


def _restore_ctrl_c() -> None:
    try:
        asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
    except (NotImplementedError, RuntimeError, ValueError):
        pass

