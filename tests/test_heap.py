"""The cycle collector around start-up (moot.cli.heap): held by the process entry point only,
settled once, and what start-up built frozen."""

import gc

import pytest

from moot.cli import command, heap


@pytest.fixture
def collector():
    """The interpreter's collector as the test found it, afterwards."""
    yield
    heap._held = False
    gc.unfreeze()
    gc.enable()


def test_a_held_start_up_collects_nothing_then_settles_frozen_and_collecting(collector):
    heap.hold()
    assert not gc.isenabled()
    heap.settle()
    assert gc.isenabled() and gc.get_freeze_count() > 0
    frozen = gc.get_freeze_count()
    heap.settle()  # once: a second settle freezes nothing more
    assert gc.get_freeze_count() == frozen


def test_without_hold_settle_leaves_the_collector_alone(collector):
    heap.settle()
    assert gc.isenabled() and gc.get_freeze_count() == 0


@pytest.mark.parametrize("name, settled", [("replay", True), ("validate", True), ("run", False), ("judge-eval", False)])
def test_commands_settle_when_imported_but_runs_when_their_work_starts(collector, name, settled):
    heap.hold()
    command(name)
    assert gc.isenabled() is settled


def test_a_run_settles_before_its_units_start(collector, tmp_path, monkeypatch):
    from moot.cli import main
    from moot.engine import runner

    seen = []
    real = runner.run_unit

    async def run_unit(*args, **kwargs):
        seen.append(gc.isenabled())
        return await real(*args, **kwargs)

    monkeypatch.setattr(runner, "run_unit", run_unit)
    heap.hold()
    assert main(["run", "--model", "scripted", "--out", str(tmp_path / "run"), "--quiet", "cola"]) == 0
    assert seen == [True] and gc.get_freeze_count() > 0
