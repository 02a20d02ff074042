"""A run whose answers are all unparsed is not a success: its own exit code and one line, its
results kept; `max_unparsed` sets the share a run may have; partial counts stay in the run line."""

from __future__ import annotations

import pytest

from moot.cli import main
from moot.engine.unparsed import EXIT_UNPARSED, unparsed_failure
from moot.saved.records import ResultRow


def rows(*predictions: str) -> list[ResultRow]:
    return [ResultRow(id=str(n), status="completed", prediction=p) for n, p in enumerate(predictions)]


def test_the_rule():
    assert unparsed_failure(rows("favor", "against")) is None
    assert unparsed_failure(rows("favor", "unparsed")) is None  # some unparsed: still a measurement
    assert unparsed_failure(rows("unparsed", "unparsed")) == \
        "every answer is unparsed (2 of 2): the run measured nothing"
    assert unparsed_failure(rows("favor", "unparsed"), 0.4) == \
        "1 of 2 answers unparsed (50%), more than max_unparsed 0.4"
    assert unparsed_failure(rows("favor", "unparsed"), 0.5) is None
    assert unparsed_failure(rows("unparsed"), 1.0) is None  # 1: no run fails for its answers
    assert unparsed_failure([ResultRow(id="x", status="failed"), *rows("favor")]) is None
    assert unparsed_failure([]) is None


def dataset(tmp_path, *texts: str):
    data = tmp_path / "d.csv"
    data.write_text("text,target,stance\n" + "".join(f"{t},masks,FAVOR\n" for t in texts))
    spec = tmp_path / "d.yaml"
    spec.write_text("path: d.csv\nformat: csv\ncolumns: {text: text, target: target, label: stance}\n"
                    "labels: {FAVOR: favor, AGAINST: against, NONE: neutral}\n")
    return spec


@pytest.mark.parametrize("setting, code", [("", EXIT_UNPARSED), ("max_unparsed: 1\n", 0)])
def test_a_run_whose_every_answer_is_unparsed_exits_4(tmp_path, capsys, setting, code):
    scenario = tmp_path / "s.yaml"
    scenario.write_text("protocol: debate\nrounds: 0\nmodels: {default: scripted}\n" + setting)
    out = tmp_path / "run"
    garbled = ("Masks work SCRIPTED_LABEL=GARBAGE", "Masks help SCRIPTED_LABEL=GARBAGE")  # unreadable answers
    assert main(["run", str(scenario), "--dataset", str(dataset(tmp_path, *garbled)),
                 "--out", str(out)]) == code
    captured = capsys.readouterr()
    assert captured.out.strip().splitlines()[-1].endswith("items=2 backend_calls=6 cache_hits=0 unparsed=2")
    assert (out / "results.jsonl").read_text().count('"prediction": "unparsed"') == 2  # the results are kept
    failed = "failed: every answer is unparsed (2 of 2): the run measured nothing\n"
    assert captured.err.endswith(failed) == (code == EXIT_UNPARSED)


@pytest.mark.parametrize("setting, code", [("max_unparsed: 0.4\n", EXIT_UNPARSED), ("", 0)])
def test_more_unparsed_than_the_scenario_allows_exits_4(tmp_path, capsys, setting, code):
    scenario = tmp_path / "s.yaml"
    scenario.write_text("protocol: debate\nrounds: 0\nmodels: {default: scripted}\n" + setting)
    spec = dataset(tmp_path, "Masks work SCRIPTED_LABEL=favor", "Masks help SCRIPTED_LABEL=GARBAGE")
    assert main(["run", str(scenario), "--dataset", str(spec), "--out", str(tmp_path / "run")]) == code
    captured = capsys.readouterr()
    assert captured.out.strip().splitlines()[-1].endswith("unparsed=1")  # the partial count, in the run line
    assert ("1 of 2 answers unparsed (50%), more than max_unparsed 0.4" in captured.err) == bool(setting)


def test_every_protocol_over_items_takes_max_unparsed():
    """A run over a dataset's items can end all unparsed (exit 4): every such protocol lets its
    scenario say how many unparsed answers it accepts."""
    from moot.contract.units import ITEMS
    from moot.protocols.registry import REGISTRY

    over_items = [p for p in REGISTRY.all() if p.units is ITEMS]
    assert len(over_items) >= 5
    assert [p.name for p in over_items if "max_unparsed" not in p.scenario.model_fields] == []
