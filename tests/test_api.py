"""The Python API (moot.api, named by `import moot`): running, reading runs one unit at a time,
metrics through the protocols' hooks, data frames, re-scoring, exporting, reporting, errors; and
the command line as a thin layer over it."""

from __future__ import annotations

import ast
import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from sklearn.metrics import accuracy_score, f1_score

import moot
import moot.saved.source
from moot.errors import UsageError

ROOT = Path(__file__).resolve().parents[1]
STANCE = ROOT / "datasets" / "demo-stance.yaml"


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """The folder holding this module's shared runs (and nothing else)."""
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="module")
def items(home) -> Path:
    """Eight items of the demo stance set through COLA on the scripted model."""
    out = home / "cola"
    result = moot.run("cola", dataset=STANCE, limit=8, models="scripted", out=out)
    assert result.status == "completed" and result.done == 8 == result.planned
    return out


@pytest.fixture(scope="module")
def batch(home) -> Path:
    """Three conferences (seeds 1, 2, 3) on the scripted model."""
    out = home / "conferences"
    assert moot.run("drug_policy", models="scripted", vary={"seed": [1, 2, 3]}, out=out).status == "completed"
    return out


def rows(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()]


# --- import moot ---------------------------------------------------------------------------------

def test_import_moot_loads_nothing_but_moot():
    code = ("import sys, moot; print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('moot', 'pandas', 'pydantic', 'autogen_core', 'yaml', 'typing', 'numpy')))")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert found.strip() == "['moot']"


def test_every_public_name_resolves_with_a_docstring():
    assert set(moot.__all__) == {"__version__", *moot._WHERE}
    for name in moot.__all__[1:]:
        value = getattr(moot, name)
        assert (value.__doc__ or "").strip(), name
        assert name in dir(moot)
    with pytest.raises(AttributeError):
        moot.no_such_name  # noqa: B018


# --- running -------------------------------------------------------------------------------------

def test_a_batch_of_variants_runs_and_reads_back(batch):
    run = moot.open_run(batch)
    units = list(run.units())
    assert [u.id for u in units] == ["seed-1", "seed-2", "seed-3"]
    assert [u.seed for u in units] == [1, 2, 3] and units[1].variant == {"seed": "2"}
    assert all(u.status == "completed" and u.prediction is None and u.correct is None for u in units)
    assert run.status == "complete" and run.protocol == "conference"


def test_one_item_given_by_hand_and_its_transcript_file_read_as_a_run(tmp_path):
    inputs = {"text": "Online classes are a drag. SCRIPTED_LABEL=favor", "target": "online classes"}
    result = moot.run("cola", inputs=inputs, models="scripted", out=tmp_path / "one")
    assert result.planned == 1 and result.status == "completed"
    (row,) = rows(tmp_path / "one")
    assert row["id"].startswith("item-") and row["prediction"] == "favor"
    alone = moot.open_run(tmp_path / "one" / row["transcript"])  # a transcript file is a run of one unit
    (unit,) = alone.units()
    assert not alone.is_folder and unit.id == row["id"] and unit.prediction == "favor" and unit.status == "completed"
    assert moot.units_df(alone)["prediction"].tolist() == ["favor"]


def test_a_run_without_out_goes_to_its_default_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default folders are relative to the working directory
    single = moot.prepare("drug_policy", models="scripted", check_models=False)
    batch = moot.prepare("drug_policy", models="scripted", check_models=False, vary={"seed": [1, 2]})
    assert (single.out, batch.out) == (Path("transcripts/drug_policy"), Path("transcripts/drug_policy-seed-1-2"))


def test_running_again_continues_without_calling_a_model(items):
    again = moot.run("cola", dataset=STANCE, limit=8, models="scripted", out=items)
    assert again.status == "completed" and again.done == 8
    assert again.stats.backend_calls == 0


def test_a_loaded_scenario_runs_with_its_source_and_a_watch_sees_every_unit(tmp_path):
    path = ROOT / "scenarios" / "cola.yaml"
    scenario = moot.load_scenario(path)
    seen: list[str] = []
    started: list[tuple[int, int]] = []

    def watch(running: moot.Running) -> moot.Watcher:
        started.append((running.planned, running.done))
        return moot.Watcher(progress=lambda result: seen.append(result.unit.id))

    prepared = moot.prepare(scenario, source=path, dataset=STANCE, limit=3, models="scripted", out=tmp_path / "r")
    assert prepared.planned == 3 and not (tmp_path / "r").exists()  # prepared: nothing written
    result = prepared.run(watch)
    assert started == [(3, 0)] and sorted(seen) == sorted(r["id"] for r in rows(tmp_path / "r"))
    meta = json.loads((tmp_path / "r" / "run.json").read_text(encoding="utf-8"))
    assert meta["scenario_path"] == str(path) and result.open().path == tmp_path / "r"


def test_a_run_from_inside_a_running_event_loop(tmp_path):
    """A notebook's cell runs in an event loop: `run` goes on a thread of its own."""
    async def cell() -> moot.RunResult:
        return moot.run("cola", dataset=STANCE, limit=2, models="scripted", out=tmp_path / "r")

    assert asyncio.run(cell()).status == "completed"


def test_run_async_runs_in_the_callers_loop(tmp_path):
    prepared = moot.prepare("cola", dataset=STANCE, limit=2, models="scripted", out=tmp_path / "r")
    assert asyncio.run(prepared.run_async()).done == 2


def test_a_shared_reply_cache_answers_a_second_run(tmp_path):
    options = moot.RunOptions(cache=tmp_path / "shared.sqlite")
    first = moot.run("cola", dataset=STANCE, limit=2, models="scripted", out=tmp_path / "a", options=options)
    second = moot.run("cola", dataset=STANCE, limit=2, models="scripted", out=tmp_path / "b", options=options)
    assert first.stats.backend_calls > 0 and first.stats.cache_hits == 0
    assert second.stats.backend_calls == 0 and second.stats.cache_hits == first.stats.backend_calls
    assert not (tmp_path / "b" / "cache.sqlite").exists()


@pytest.mark.parametrize("call, words", [
    (lambda out: moot.run("drug_polcy", models="scripted", out=out), "did you mean 'drug_policy'?"),
    (lambda out: moot.run("cola", vary={"seed": [1, 2]}, models="scripted", out=out), "--vary"),
    (lambda out: moot.run("drug_policy", dataset=STANCE, models="scripted", out=out), "has no items"),
    (lambda out: moot.run("cola", dataset=STANCE, limit=0, models="scripted", out=out), "at least 1"),
    (lambda out: moot.run(moot.load_scenario("cola"), models="scripted", out=out), "source=FILE"),
    (lambda out: moot.run("cola", dataset=STANCE, models={"nobody": "scripted"}, out=out), "unknown role"),
    (lambda out: moot.run("cola", dataset=STANCE, models="scripted", out=out,
                          options=moot.RunOptions(resume=True)), "nothing to continue"),
])
def test_bad_input_is_one_moot_error_and_nothing_is_written(tmp_path, call, words):
    with pytest.raises(moot.MootError) as caught:
        call(tmp_path / "out")
    assert words in str(caught.value) and caught.value.exit_code == 2 and "\n" not in str(caught.value)
    assert not (tmp_path / "out").exists()


def test_run_options_refuse_no_concurrency():
    with pytest.raises(UsageError, match="at least 1"):
        moot.RunOptions(concurrency=0)


# --- reading one unit at a time ------------------------------------------------------------------

@pytest.fixture
def loads(monkeypatch) -> list[Path]:
    """Every transcript file loaded from now on (through a run's units)."""
    seen: list[Path] = []
    real = moot.saved.source.load

    def counting(path, *args, **kwargs):
        seen.append(Path(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(moot.saved.source, "load", counting)
    return seen


def test_opening_a_run_and_its_rows_reads_no_transcript(items, loads):
    run = moot.open_run(items)
    units = moot.units_df(run)
    assert len(units) == 8 and run.metrics().value is not None
    assert loads == []


def test_events_are_read_one_transcript_at_a_time(items, loads):
    events = moot.open_run(items).events()
    unit, event = next(events)
    assert event.seq == 1 and loads == [unit.path]
    ids = {unit.id}
    for unit, _ in events:
        ids.add(unit.id)
        assert len(loads) == len(ids)  # a unit's transcript is loaded once, when its events start
    assert len(ids) == 8


# --- metrics through the protocols' hooks ---------------------------------------------------------

def test_labelled_metrics_equal_scikit_learn_on_the_results(items):
    found = rows(items)
    gold, predicted = [r["gold"] for r in found], [r["prediction"] for r in found]
    metrics = moot.open_run(items).metrics()
    assert metrics.headline == "macro_f1"
    assert metrics.value == pytest.approx(f1_score(gold, predicted, labels=["favor", "against", "neutral"],
                                                   average="macro", zero_division=0))
    assert metrics.measures["correct"].mean == pytest.approx(accuracy_score(gold, predicted))
    assert metrics.measures["correct"].n == 8


def test_a_conference_run_reports_its_protocols_headline_measure(batch):
    metrics = moot.open_run(batch).metrics()
    rounds = [t["rounds"] for r in rows(batch) for t in r["topics"] if t["closed_by"] in ("agreement", "moderator")]
    per_unit = [[t["rounds"] for t in r["topics"] if t["closed_by"] in ("agreement", "moderator")]
                for r in rows(batch)]
    assert rounds and metrics.headline == "rounds_to_agreement" and metrics.classification is None
    assert metrics.value == pytest.approx(sum(sum(u) / len(u) for u in per_unit) / len(per_unit))
    assert metrics.measures["evaluator_overall"].n == 3  # a measure that reads transcripts


# --- data frames -------------------------------------------------------------------------------

def test_runs_df_has_one_row_per_run_folder_found(home, items, batch):
    df = moot.runs_df(home)  # the folder holding both run folders
    by_name = df.set_index("name")
    assert set(by_name.index) == {"cola", "conferences"}
    assert by_name.loc["cola", "units_planned"] == 8 and by_name.loc["cola", "status"] == "complete"
    assert by_name.loc["cola", "headline"] == "macro_f1" and by_name.loc["cola", "dataset"] == "demo-stance"
    assert by_name.loc["conferences", "units_done"] == 3 and by_name.loc["conferences", "models"] == "scripted"
    assert str(df["created"].dtype).startswith("datetime64")


def test_units_df_rows_are_the_results_with_measures(items, batch):
    df = moot.units_df([items, batch])
    cola = df[df["protocol"] == "cola"].set_index("id")
    for row in rows(items):
        assert cola.loc[row["id"], "prediction"] == row["prediction"]
        assert cola.loc[row["id"], "correct"] == float(row["prediction"] == row["gold"])
    conferences = df[df["protocol"] == "conference"]
    assert list(conferences["seed"]) == [1, 2, 3] and list(conferences["variant"]) == ["seed=1", "seed=2", "seed=3"]
    assert conferences["rounds_to_agreement"].notna().all() and conferences["correct"].isna().all()


def test_events_and_calls_df_match_the_transcripts(batch):
    run = moot.open_run(batch)
    transcripts = [u.transcript() for u in run.units()]
    events = moot.events_df(batch)
    assert len(events) == sum(len(t.events) for t in transcripts)
    messages = moot.events_df(batch, types=["message"])
    assert set(messages["type"]) == {"message"} and len(messages) == sum(len(t.messages) for t in transcripts)
    calls = moot.calls_df(batch)
    assert len(calls) == sum(len(t.calls) for t in transcripts)
    assert calls["prompt_tokens"].sum() == sum(c.usage.prompt_tokens for t in transcripts for c in t.calls)
    assert set(calls["role"]) == {c.role for t in transcripts for c in t.calls}


# --- rescore, export, report ---------------------------------------------------------------------

def test_rescore_copies_the_run_and_leaves_the_original(items, tmp_path):
    before = (items / "results.jsonl").read_bytes()
    done = moot.rescore(items, {"judger": "scripted"}, out=tmp_path / "rescored")
    assert done.is_folder and not done.failed and len(done.units) == 8
    assert (items / "results.jsonl").read_bytes() == before
    rescored = rows(tmp_path / "rescored")
    assert all(r["rescored"] == {"judger": "scripted"} and "original_prediction" in r for r in rescored)
    assert moot.runs_df(tmp_path / "rescored")["rescored_from"].iloc[0] == str(items.resolve())


def test_export_writes_the_document(items, tmp_path):
    path = moot.export(items, out=tmp_path / "page.md")
    assert path.read_text(encoding="utf-8") == moot.document(items, "md")
    assert moot.export(items, out=tmp_path / "page.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("format, name", [("pdf", "page.pdf"), ("docx", "page.html"), (None, "page.pdf"),
                                          (None, "page.txt")])
def test_export_refuses_a_format_it_does_not_write(items, tmp_path, format, name):
    """Never HTML in a .pdf: a format other than html or md, or a file whose suffix names another,
    is a MootError and nothing is written."""
    with pytest.raises(moot.MootError, match="moot writes html or md documents"):
        moot.export(items, format=format, out=tmp_path / name)
    assert not (tmp_path / name).exists()


def test_write_report_over_a_folder_of_runs(home, items, batch, tmp_path):
    built = moot.write_report(home, out=tmp_path / "report")
    text = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert [r.path.name for r in built.runs] == ["cola"]  # the labelled runs' tables
    assert "seeds 1, 2, 3" in built.main and "demo-stance" in text  # and the conferences' part


# --- the command line is a thin layer ------------------------------------------------------------

ENGINE = {"ModelEngine", "RunFolder.__enter__", "run_units", "rescore_units", "build_report", "check_identity",
          "resolve_models", "preflight", "render_html", "render_markdown"}


@pytest.mark.parametrize("name", ["run", "score", "export", "report", "dataset_command"])
def test_the_command_line_assembles_no_engine(name):
    tree = ast.parse((ROOT / "moot" / "cli" / f"{name}.py").read_text(encoding="utf-8"))
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    used |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert not used & ENGINE
