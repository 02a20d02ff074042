"""Scenario identity for resume: the validated content decides, not the file's bytes.

A comment-only edit (e.g. a `# yaml-language-server: $schema=...` line) keeps resuming a
conference transcript and a batch run directory; a real change (a topic, a prompt) is refused
with one line. Runs recorded before content hashes existed compare the file's sha256.
"""

from __future__ import annotations

import json

import pytest
from test_batch import files  # noqa: F401  (the batch tests' scenario + dataset fixture)

from run_support import conference

from moot.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, main
from moot.log.events import RunResumed
from moot.scenario.load import load_scenario, scenario_content_hash, scenario_hash

SCHEMA_LINE = "# yaml-language-server: $schema=../docs/scenario.schema.json\n"
FAILING = "judge=scripted:MORE_DEBATE,FAIL,FAIL,FAIL"
MORE = "judge=scripted:" + ",".join(["MORE_DEBATE"] * 80)


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    return err


def test_content_hash_ignores_comments_and_layout_but_not_content(make_scenario):
    path = make_scenario()
    content = scenario_content_hash(load_scenario(path))
    text = path.read_text()
    path.write_text(SCHEMA_LINE + text.replace("title: Test conference", "title:   'Test conference'  # c"))
    assert scenario_content_hash(load_scenario(path)) == content
    path.write_text(text.replace("topic number 1", "topic number one"))
    assert scenario_content_hash(load_scenario(path)) != content


def failed_conference(make_scenario, tmp_path, capsys):
    path, out = make_scenario(topics=2, max_rounds=2), tmp_path / "run"
    assert main([str(path), "--model", FAILING, "--out", str(out), "--quiet"]) == EXIT_FAILED
    capsys.readouterr()
    return path, out


def resume(path, out) -> int:
    """Continue with a judge that no longer fails: another script, so another model (allowed)."""
    return main([str(path), "--model", MORE, "--out", str(out), "--allow-model-change", "--quiet"])


def test_conference_resumes_after_a_comment_only_edit(make_scenario, tmp_path, capsys):
    path, out = failed_conference(make_scenario, tmp_path, capsys)
    started = conference(out).started
    assert started.scenario_sha256 == scenario_hash(path)
    assert started.scenario_content_sha256 == scenario_content_hash(load_scenario(path))
    path.write_text(SCHEMA_LINE + path.read_text())
    assert resume(path, out) == EXIT_OK
    t = conference(out)
    assert t.finished.status == "completed" and len(t.of_type(RunResumed)) == 1


@pytest.mark.parametrize("old, new", [("topic number 2", "another topic"),
                                      ("persona: Bob the tester.", "persona: Bob the sceptic.")])
def test_conference_refuses_a_real_change(make_scenario, tmp_path, capsys, old, new):
    path, out = failed_conference(make_scenario, tmp_path, capsys)
    before = (out / "conference.jsonl").read_bytes()
    path.write_text(SCHEMA_LINE + path.read_text().replace(old, new))
    assert resume(path, out) == EXIT_USAGE
    err = one_line_error(capsys)
    assert f"{out} holds a run with another scenario" in err and "choose another --out, or delete the folder" in err
    assert (out / "conference.jsonl").read_bytes() == before  # nothing written


def test_old_run_without_content_hash_compares_the_file(make_scenario, tmp_path, capsys):
    path, out = failed_conference(make_scenario, tmp_path, capsys)
    meta = json.loads((out / "run.json").read_text())
    del meta["scenario_content_sha256"]
    (out / "run.json").write_text(json.dumps(meta))
    path.write_text(SCHEMA_LINE + path.read_text())
    assert resume(path, out) == EXIT_USAGE
    assert "holds a run with another scenario" in one_line_error(capsys)
    path.write_text(path.read_text()[len(SCHEMA_LINE):])  # the very file it started with
    assert resume(path, out) == EXIT_OK


def batch(capsys, scenario, spec, out) -> tuple[int, list[str]]:
    code = main([str(scenario), "--dataset", str(spec), "--limit", "2", "--out", str(out)])
    captured = capsys.readouterr()
    return code, captured.out.strip().splitlines() or [captured.err.strip()]


def test_batch_run_dir_survives_a_comment_only_edit(files, capsys):  # noqa: F811
    scenario, spec, out = files
    assert batch(capsys, scenario, spec, out)[0] == 0
    meta = json.loads((out / "run.json").read_text())
    assert meta["scenario_sha256"] == scenario_hash(scenario)
    assert meta["scenario_content_sha256"] == scenario_content_hash(load_scenario(scenario))
    scenario.write_text(SCHEMA_LINE + scenario.read_text() + "# a comment\n")
    code, lines = batch(capsys, scenario, spec, out)
    assert code == 0 and lines[-1] == f"run: {out} items=2 backend_calls=0 cache_hits=0 unparsed=0"
    assert json.loads((out / "run.json").read_text())["scenario_sha256"] == meta["scenario_sha256"]  # cited


@pytest.mark.parametrize("change", ["prompts: {judger: 'Answer {text} {target}'}\n",
                                    "labels: [favor, against, none]\n"])
def test_batch_run_dir_refuses_a_real_change(files, capsys, change):  # noqa: F811
    scenario, spec, out = files
    assert batch(capsys, scenario, spec, out)[0] == 0
    scenario.write_text(scenario.read_text() + change)
    assert main([str(scenario), "--dataset", str(spec), "--limit", "2", "--out", str(out)]) == EXIT_USAGE
    err = one_line_error(capsys)
    assert f"{out} holds a run with another scenario" in err and "choose another --out, or delete the folder" in err


def test_old_run_dir_without_content_hash_compares_the_file_then_records_it(files, capsys):  # noqa: F811
    scenario, spec, out = files
    assert batch(capsys, scenario, spec, out)[0] == 0
    meta = json.loads((out / "run.json").read_text())
    del meta["scenario_content_sha256"]
    (out / "run.json").write_text(json.dumps(meta))
    original = scenario.read_text()
    scenario.write_text(SCHEMA_LINE + original)
    code, lines = batch(capsys, scenario, spec, out)
    assert code == EXIT_USAGE and "holds a run with another scenario" in lines[-1]
    scenario.write_text(original)
    assert batch(capsys, scenario, spec, out)[0] == 0  # same file: accepted, content hash recorded
    assert json.loads((out / "run.json").read_text())["scenario_content_sha256"]
    scenario.write_text(SCHEMA_LINE + original)
    assert batch(capsys, scenario, spec, out)[0] == 0


def test_a_key_left_at_its_default_leaves_the_content_hash_as_it_was(make_scenario):
    """So a key a later moot adds (with a default) changes no scenario's hash."""
    path = make_scenario()
    content = scenario_content_hash(load_scenario(path))
    path.write_text(path.read_text() + "backends: {local: {extra_buffers: auto, n_ctx: 8192}}\n")
    assert scenario_content_hash(load_scenario(path)) == content


def test_a_run_whose_content_an_earlier_moot_hashed_otherwise_resumes_from_the_same_file(make_scenario, tmp_path,
                                                                                        capsys):
    path, out = failed_conference(make_scenario, tmp_path, capsys)
    meta = json.loads((out / "run.json").read_text())
    meta["scenario_content_sha256"] = "0" * 64  # as another hashing of the same content would give
    (out / "run.json").write_text(json.dumps(meta))
    transcript = out / "conference.jsonl"
    lines = transcript.read_text().splitlines(keepends=True)
    started = json.loads(lines[0])
    started["scenario_content_sha256"] = "0" * 64
    transcript.write_text(json.dumps(started) + "\n" + "".join(lines[1:]))
    assert resume(path, out) == EXIT_OK
    assert conference(out).finished.status == "completed"
