"""Torture: a run folder's contents are data, not paths to follow (issue 32, class 1). A results
row that names a transcript outside its run folder (`..`, an absolute path, a link inside the
folder that leads out) is refused in one line naming the file, by every reader: the report, the
documents, the viewer's bundle and the Python API; what lies outside is never read, shown or
copied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from torture_support import case, files_of, moot, scripted_batches

import moot as api
from moot.errors import MootError

OUTSIDE = "SECRET-OUTSIDE-7f3a9c: a file the run folder must not lead to"


def tampered(tmp_path: Path, how: str) -> Path:
    """A finished run whose first row names `secret.txt` beside the folders, as `how` says."""
    scripted_batches(tmp_path / "runs", ("run",))
    secret = tmp_path / "secret.txt"
    secret.write_text(json.dumps({"type": "run_started", "note": OUTSIDE}) + "\n", encoding="utf-8")
    folder = tmp_path / "runs" / "run"
    results = folder / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    if how == "link":
        (folder / "leads-out.jsonl").symlink_to(secret)
    rows[0]["transcript"] = {"dotdot": "../../secret.txt", "absolute": str(secret), "link": "leads-out.jsonl"}[how]
    results.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


HOWS = ["dotdot", "absolute", "link"]


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("command", ["report", "export"])
def test_a_command_refuses_a_row_that_leads_out_in_one_line(tmp_path, how, command):
    with case("bad inputs", "paths"):
        folder = tampered(tmp_path, how)
        out = tmp_path / "out"
        args = ["report", folder, "--out", out] if command == "report" else ["export", folder, "--out", out / "run.md"]
        ran = moot(*args)
        assert ran.code != 0 and len(ran.err_lines) == 1, ran.err
        assert "names a transcript outside its run folder" in ran.err and "results.jsonl" in ran.err
        assert OUTSIDE not in ran.out + ran.err
        assert not any(OUTSIDE in p.read_text(errors="replace") for p in files_of(out)) if out.exists() else True


@pytest.mark.parametrize("how", HOWS)
def test_the_bundle_never_copies_what_a_row_leads_to(tmp_path, how):
    with case("bad inputs", "paths"):
        folder = tampered(tmp_path, how)
        bundle = tmp_path / "bundle"
        ran = moot("view", folder.parent, "--bundle", bundle)
        assert OUTSIDE not in ran.out + ran.err
        assert not any(OUTSIDE in p.read_text(errors="replace") for p in files_of(bundle)) if bundle.exists() else True
        assert ran.code == 0 or len(ran.err_lines) == 1, ran.err


@pytest.mark.parametrize("how", HOWS)
def test_the_api_raises_a_moot_error_naming_the_file(tmp_path, how):
    with case("bad inputs", "paths"):
        folder = tampered(tmp_path, how)
        with pytest.raises(MootError, match="outside its run folder"):
            [unit.transcript() for unit in api.open_run(folder).units()]


def test_a_transcript_inside_the_folder_still_reads(tmp_path):
    """Rows as moot writes them (relative to the folder), and as older runs wrote them (relative
    to where moot ran: the file of that name in the folder), read as before."""
    scripted_batches(tmp_path / "runs", ("run",))
    folder = tmp_path / "runs" / "run"
    results = folder / "results.jsonl"
    rows = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    rows[0]["transcript"] = f"transcripts/run/{Path(rows[0]['transcript']).name}"  # an older run's
    results.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert all(unit.transcript().finished for unit in api.open_run(folder).units())
