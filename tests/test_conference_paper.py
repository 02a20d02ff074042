"""The shipped conference scenarios on the scripted model, and drug_policy_paper.yaml as the paper
configured its with-judge run (Heller et al. §5.2.2): what each role is asked and shown."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_support import conference, run_scenario

from moot.cli import main
from moot.log.events import Message
from moot.protocols.conference.events import Coverage, Score, Verdict
from moot.models.backends.scripted.client import ScriptedChatCompletionClient
from moot.scenario.load import load_scenario

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
CONFERENCES = sorted(p for p in SCENARIOS.glob("*.yaml") if load_scenario(p).protocol == "conference")
TITLE = "Find a new approach to formulating and appraising drug policy"
P1, P2, M, J = "Participant_1", "Participant_2", "Moderator", "Judge"


@pytest.mark.parametrize("path", CONFERENCES, ids=[p.stem for p in CONFERENCES])
def test_every_shipped_conference_validates_and_runs_on_the_scripted_model(path, tmp_path, capsys):
    assert main(["validate", str(path)]) == 0
    out = tmp_path / "run"
    assert main(["run", str(path), "--model", "scripted", "--out", str(out), "--quiet"]) == 0
    t = conference(out)
    assert t.completed and t.finished.stop_reason == "all topics closed"
    assert [(c.topic, c.total) for c in t.of_type(Coverage)] == [(0, 7)]  # the seven clusters of topic 1


def test_paper_configuration_as_each_role_sees_it(tmp_path):
    made = {name: ScriptedChatCompletionClient() for name in (M, P1, P2, "Assessor")}
    made[J] = ScriptedChatCompletionClient(["MORE_DEBATE", "AGREEMENT"])
    out = tmp_path / "run"
    assert run_scenario(SCENARIOS / "drug_policy_paper.yaml", out, clients=made) == 0
    t = conference(out)
    actions = [(m.speaker, m.action) for m in t.of_type(Message)][:10]
    assert actions == [(M, "open"), (P1, "speak"), (P2, "speak"), (J, "judge"), (M, "continue"),  # Algorithm 1
                       (P1, "speak"), (P2, "speak"), (J, "judge"), ("Assessor", "assess"), (M, "open")]
    assert t.of_type(Score) == []  # no evaluator in the §5.2.2 runs
    first = made[M].requests[0]["messages"][-1].content
    assert first.startswith(f"Conversation so far:\nTask: {TITLE}\n\nOpen topic 1 of 3")  # the title alone is the task
    participant = made[P1].requests[0]["messages"][0].content
    assert participant.startswith(f'You are Participant_1, a participant in a decision conference titled "{TITLE}".\n')
    assert f"The task of the conference: {TITLE}\n" in participant and "researcher" not in participant  # no persona
    judge = made[J].requests[0]
    assert judge["output"] is None and "one of AGREEMENT or MORE DEBATE" in judge["messages"][-1].content
    assert [(v.verdict, v.raw) for v in t.of_type(Verdict)][:2] == [("MORE_DEBATE", "MORE DEBATE"),
                                                                   ("AGREEMENT", "AGREEMENT")]
    told = made[M].requests[1]["messages"][-1].content  # the moderator after MORE DEBATE: the verdict only
    assert "Judge: MORE DEBATE\n\n" in told and "reason" not in told
    later = made[P1].requests[-1]["messages"][-1].content  # topic 3: the whole conference so far
    assert "develop a set of criteria" in later and "apply the model to alcohol" in later
    assert t.started.scenario["generation"]["max_tokens"] == 300
