"""The contract: a protocol that lacks a hook or gives one of the wrong type is refused when it
registers, with one line naming the protocol and the hook; a protocol's event types are
registered in the log with their versions, and an older event is migrated on load."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Literal

import pytest

from moot.contract.protocol import Outcome, Protocol, ProtocolError
from moot.contract.registry import Registry
from moot.contract.units import scenario_runs
from moot.log.events import CORE_TYPES, EventBase, Message, TranscriptError
from moot.log.registry import EventRegistry, EventType
from moot.log.transcript import load
from moot.protocols.conference import protocol as conference
from moot.protocols.conference.events import EVENT_TYPES
from moot.scenario.blocks import Backends, Generation, Retry, ScenarioBase
from moot.views.unit import UnitView

ROOT = Path(__file__).resolve().parents[1]


class ToyScenario(ScenarioBase):
    PROTOCOL = "toy"
    protocol: Literal["toy"] = "toy"
    models: dict[str, str] = {}
    generation: Generation = Generation()
    retry: Retry = Retry()
    backends: Backends = Backends()

    def roles(self) -> list[str]:
        return ["speaker"]


class Said(EventBase):
    """A toy protocol's event, version 2: `words` (version 1 called them `text`)."""

    type: Literal["said"] = "said"
    words: str


async def run(scenario: ToyScenario, ctx: object) -> Outcome:
    return Outcome()


def toy(**changes: object) -> Protocol[ToyScenario]:
    hooks = dict(name="toy", title="Toy", paper="-", scenario=ToyScenario, policy=lambda turns: None, run=run,
                 units=scenario_runs(), events=(EventType(Said, 2, {1: lambda e: {k if k != "text" else "words": v for k, v in e.items()}}),))
    return Protocol(**{**hooks, **changes})  # type: ignore[arg-type]


def registered(protocol: Protocol[ToyScenario]) -> EventRegistry:
    events = EventRegistry(CORE_TYPES)
    Registry([protocol], events=events)
    return events


def test_a_protocol_that_keeps_the_contract_registers_with_its_events():
    events = registered(toy())
    assert events.knows("said") and not events.knows("verdict")


@pytest.mark.parametrize("change, message", [
    ({"run": None}, "toy: run is missing"),
    ({"run": lambda scenario, ctx: Outcome()}, "toy: run must be an async function"),
    ({"run": lambda scenario: None}, "toy: run must be an async function"),
    ({"scenario": dict}, "toy: scenario must be a subclass of ScenarioBase"),
    ({"view": object}, "toy: view must be a subclass of UnitView"),
    ({"view": None}, "toy: view is missing"),
    ({"events": [EventType(Said)]}, "toy: events must be a tuple"),
    ({"events": (Said,)}, "toy: events item 0: must be EventType"),
    ({"inputs": ("text",)}, "toy: inputs item 0: must be InputField"),
    ({"deciders": ("judge",)}, "toy: deciders ('judge',) need a rescore function"),
    ({"rescore": run}, "toy: rescore must take 3 argument(s)"),
    ({"policy": "next_step"}, "toy: policy must be a function"),
    ({"durable": "yes"}, "toy: durable must be bool, not str"),
    ({"name": "other"}, "other: its scenario schema must have `protocol: Literal['other']`"),
])
def test_a_protocol_missing_a_hook_or_with_a_wrong_type_is_refused(change, message):
    with pytest.raises(ProtocolError) as refused:
        registered(toy(**change))
    assert str(refused.value).startswith(message)


class BareScenario(ScenarioBase):
    """A scenario without the blocks ScenarioBase promises the engine (models, retry, backends)."""

    PROTOCOL = "toy"
    protocol: Literal["toy"] = "toy"
    generation: Generation = Generation()


def test_a_scenario_without_the_shared_blocks_is_refused():
    with pytest.raises(ProtocolError, match=r"^toy: its scenario schema must have models, retry, backends"):
        registered(toy(scenario=BareScenario))


def test_only_a_protocol_registers():
    with pytest.raises(ProtocolError, match="is not a Protocol"):
        Registry([object()])  # type: ignore[list-item]


def test_an_async_run_that_takes_too_few_arguments_is_refused():
    async def one(scenario: ToyScenario) -> Outcome:
        return Outcome()

    with pytest.raises(ProtocolError, match=r"^toy: run must take 2 argument\(s\)$"):
        registered(toy(run=one))


def test_an_event_type_must_not_take_a_core_name_or_another_protocols():
    class Clash(EventBase):
        type: Literal["message"] = "message"

    with pytest.raises(ProtocolError, match="toy: event type 'message' is registered already"):
        Registry([toy(events=(EventType(Clash),))], events=EventRegistry([Message]))
    class OtherScenario(ToyScenario):
        protocol: Literal["other"] = "other"  # type: ignore[assignment]

    events = registered(toy())
    with pytest.raises(ProtocolError, match="other: event type 'said' is registered already"):
        Registry([toy(name="other", scenario=OtherScenario, events=(EventType(Said, 1),))], events=events)
    with pytest.raises(ProtocolError, match=r"version 3 needs a migration from each older version \(1..2\)"):
        registered(toy(events=(EventType(Said, 3, {1: dict}),)))


def test_the_same_protocol_twice_is_refused_but_its_events_may_be_registered_again():
    events = EventRegistry(())
    Registry([conference.PROTOCOL], events=events)
    Registry([conference.PROTOCOL], events=events)  # another registry of the same protocol: harmless
    with pytest.raises(ProtocolError, match="protocol 'conference' is registered twice"):
        Registry([conference.PROTOCOL, conference.PROTOCOL], events=events)
    assert {t.name for t in EVENT_TYPES} == {"verdict", "score", "topic_closed", "coverage"}


def toy_transcript(path: Path, written: dict[str, int] | None, said: dict) -> Path:
    started = {"type": "run_started", "seq": 1, "run_id": "r", "protocol": "toy", "scenario_path": "",
               "scenario_sha256": "", "scenario": {}, "models": {}}
    if written is not None:
        started["event_versions"] = written
    path.write_text(json.dumps(started) + "\n" + json.dumps({"seq": 2, "type": "said", **said}) + "\n")
    return path


def test_an_older_protocol_event_is_migrated_and_a_newer_one_refused(tmp_path):
    events = registered(toy())
    old = load(toy_transcript(tmp_path / "v1.jsonl", None, {"text": "hello"}), events)  # absent: version 1
    assert old.events[1] == Said(seq=2, words="hello")
    current = load(toy_transcript(tmp_path / "v2.jsonl", {"said": 2}, {"words": "hi"}), events)
    assert current.events[1] == Said(seq=2, words="hi")
    with pytest.raises(TranscriptError, match=r"v3.jsonl:2: event type 'said' version 3 is newer than this moot "
                                              r"reads \(2\); upgrade moot"):
        load(toy_transcript(tmp_path / "v3.jsonl", {"said": 3}, {"words": "hi"}), events)
    with pytest.raises(TranscriptError, match=r"v1.jsonl:2: bad event: .*'said'"):
        load(tmp_path / "v1.jsonl", EventRegistry(CORE_TYPES))  # nobody registered it


def test_a_run_records_the_versions_of_its_protocols_events(tmp_path):
    from moot.cli import main

    assert main([str(ROOT / "scenarios" / "drug_policy.yaml"), "--model", "scripted", "--out", str(tmp_path / "r"),
                 "--quiet"]) == 0
    started = json.loads((tmp_path / "r" / "conference.jsonl").read_text().splitlines()[0])
    assert started["event_versions"] == {"verdict": 1, "score": 1, "topic_closed": 1, "coverage": 1}


def test_a_fresh_process_loads_a_conference_transcript_without_importing_the_conference(tmp_path):
    """The log finds the conference's event types among the installed protocols, through the hook
    the protocol registry installs into it (importing the registry imports no protocol)."""
    from moot.cli import main

    assert main([str(ROOT / "scenarios" / "drug_policy.yaml"), "--model", "scripted", "--out", str(tmp_path / "r"),
                 "--quiet"]) == 0
    code = ("import sys; import moot.contract.registry; from moot.log.transcript import load; "
            "assert 'moot.protocols.conference' not in sys.modules; "
            f"t = load({str(tmp_path / 'r' / 'conference.jsonl')!r}); "
            "print(sorted({type(e).__module__ for e in t.events}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['moot.log.events', 'moot.protocols.conference.events']"


def test_the_view_of_an_unknown_protocol_reads_it_as_items():
    view = UnitView({})
    assert view.section("analysis", None).title == "Analysis" and view.parts() == []
