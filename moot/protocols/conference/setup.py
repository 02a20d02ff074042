"""A conference scenario as its agents see it: the routing plan and the setup they share."""

from __future__ import annotations

from moot.agents.conference.setup import ConferenceSetup
from moot.agents.conference.reading import Reading
from moot.protocols.conference.schema import Scenario
from moot.speaker_selection.conference import ConferencePlan


def plan_of(scenario: Scenario) -> ConferencePlan:
    return ConferencePlan(
        moderator=scenario.moderator.name,
        participants=tuple(p.name for p in scenario.participants),
        judge=scenario.judge.name if scenario.judge else None,
        evaluator=scenario.evaluator.name if scenario.evaluator else None,
        topic_count=len(scenario.topics), max_rounds=scenario.limits.max_rounds_per_topic,
        agreement=scenario.routing.agreement, on_more_debate=scenario.routing.on_more_debate,
        assessor=scenario.assessor.name if scenario.assessor else None,
        assessed=tuple(sorted(scenario.references())),
    )


def setup_of(scenario: Scenario) -> ConferenceSetup:
    return ConferenceSetup(plan_of(scenario), scenario.title, scenario.task_text(), tuple(scenario.topics),
                           scenario.templates(), scenario.window(), Reading.of(scenario.judging),
                           scenario.references(), scenario.speaker_labels(),
                           {a.name: a.persona for _, a in scenario.agents()}, scenario.choice,
                           scenario.agreement_threshold)
