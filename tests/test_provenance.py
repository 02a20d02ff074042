"""Provenance a reader can check (run.json): the prompts as sent, a content hash over the
templates, moot's version and commit, the libraries' versions, each local model file's sha256
(hashed once per file stamp), and a later invocation in another environment recorded."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from importlib import metadata
from pathlib import Path

from test_batch import files  # noqa: F401  (the batch tests' scenario + dataset fixture)

from moot.cli import main
from moot.engine import provenance
from moot.engine.provenance import PACKAGES, file_identity, model_files
from moot.scenario.load import load_scenario, scenario_content_hash

ROOT = Path(__file__).resolve().parents[1]


def run(scenario: Path, spec: Path, out: Path) -> dict:
    assert main([str(scenario), "--dataset", str(spec), "--limit", "2", "--out", str(out), "--quiet"]) == 0
    return json.loads((out / "run.json").read_text())


def test_run_json_records_the_prompts_as_sent_and_the_environment(files):  # noqa: F811
    scenario, spec, out = files
    scenario.write_text(scenario.read_text() + "prompts: {judger: 'Say the stance of $text on $target.'}\n")
    meta = run(scenario, spec, out)
    loaded = load_scenario(scenario)
    assert meta["scenario"]["prompts"] == {"judger": "Say the stance of $text on $target."}  # the override
    assert meta["prompts"] == loaded.templates() and meta["prompts"]["judger"].startswith("Say the stance")
    assert len(meta["prompts"]) > 1  # moot's default templates too
    env = meta["environment"]
    assert env["packages"] == {name: _version(name) for name in PACKAGES}
    assert env["packages"]["numpy"] == metadata.version("numpy")
    assert env["moot"]["commit"] == _commit() and env["model_files"] == {}  # scripted: no model file


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _commit() -> str | None:
    if not (ROOT / ".git").exists():
        return None
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                          env=env, check=True).stdout.strip()


def test_outside_a_checkout_the_commit_is_absent(tmp_path, monkeypatch):
    monkeypatch.setattr(provenance, "__file__", str(tmp_path / "moot" / "engine" / "provenance.py"))
    provenance.moot_commit.cache_clear()
    try:
        assert provenance.moot_commit() is None
    finally:
        provenance.moot_commit.cache_clear()


def test_the_content_hash_covers_the_default_templates(files, monkeypatch):  # noqa: F811
    scenario, _, _ = files
    loaded = load_scenario(scenario)
    before = scenario_content_hash(loaded)
    templates = loaded.templates()
    changed = {**templates, "judger": templates["judger"] + " (a later moot's wording)"}
    monkeypatch.setattr(type(loaded), "templates", lambda self: changed)
    assert scenario_content_hash(load_scenario(scenario)) != before


def test_a_model_file_is_hashed_once_per_stamp(tmp_path):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + bytes(range(256)) * 10)
    store = tmp_path / "cache" / "model-files.json"
    found = file_identity(model, store)
    assert found == {"size": model.stat().st_size, "sha256": hashlib.sha256(model.read_bytes()).hexdigest()}
    kept = json.loads(store.read_text())
    kept[str(model.resolve())]["sha256"] = "f" * 64  # what a second hash would not give: the cache is read
    store.write_text(json.dumps(kept))
    assert file_identity(model, store)["sha256"] == "f" * 64
    os.utime(model, ns=(0, model.stat().st_mtime_ns + 10**9))  # another stamp: hashed again
    assert file_identity(model, store)["sha256"] == found["sha256"]
    assert file_identity(tmp_path / "gone.gguf", store) == {"size": None, "sha256": None}


def test_model_files_are_the_local_roles_files(tmp_path, monkeypatch):
    monkeypatch.setenv("MOOT_CACHE_DIR", str(tmp_path / "cache"))
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    found = model_files({"judge": f"local:{model}", "agent": "scripted", "other": "openai:gpt-4o"})
    assert found == {str(model): {"size": 4, "sha256": hashlib.sha256(b"GGUF").hexdigest()}}
    assert (tmp_path / "cache" / "model-files.json").is_file()


def test_a_later_invocation_in_another_environment_is_recorded(files):  # noqa: F811
    scenario, spec, out = files
    first = run(scenario, spec, out)
    assert "environment_changes" not in run(scenario, spec, out)  # the same environment: nothing added
    meta = dict(first)
    meta["environment"] = {**first["environment"], "python": "2.7.0"}
    (out / "run.json").write_text(json.dumps(meta))
    again = run(scenario, spec, out)
    assert again["environment"]["python"] == "2.7.0"  # the first invocation's stays
    assert [c["to"] for c in again["environment_changes"]] == [first["environment"]]
    del meta["environment"]  # a folder older than environments: its first is a change, never back-filled
    (out / "run.json").write_text(json.dumps(meta))
    older = run(scenario, spec, out)
    assert "environment" not in older and older["environment_changes"][0]["to"] == first["environment"]
