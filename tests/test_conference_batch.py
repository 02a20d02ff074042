"""A batch of conferences: one scenario x seeds, models or persona sets, run concurrently into one
run folder with one transcript per conference; the same command again sends nothing."""

from __future__ import annotations

import json

from run_support import conference

from moot.cli import main


def last_line(capsys) -> str:
    return capsys.readouterr().out.strip().splitlines()[-1]


def test_seeds_models_and_persona_sets_multiply_into_conferences(make_scenario, tmp_path, capsys):
    sets = tmp_path / "sets.yaml"
    sets.write_text("- {Alice: A cautious economist., Bob: A bold engineer.}\n"
                    "- [{name: Alice, persona: A nurse.}, {name: Bob, persona: A judge.}]\n")
    out = tmp_path / "batch"
    argv = ["run", str(make_scenario(topics=1)), "--vary", "seed=1,2", "--vary", "model=scripted,scripted:MORE_DEBATE",
            "--vary", f"personas={sets}", "--concurrency", "4", "--out", str(out)]
    assert main(argv) == 0
    assert last_line(capsys).startswith(f"run: {out} conferences=8 backend_calls=")
    units = sorted(p.stem for p in out.glob("*.jsonl") if p.stem != "results")
    assert len(units) == 8 and "seed-1+model-scripted+personas-set1" in units
    one = conference(out, "seed-2+model-scripted_MORE_DEBATE+personas-set2")
    started = one.started
    assert started.seed == 2 and started.variant == {"seed": "2", "model": "scripted:MORE_DEBATE", "personas": "set2"}
    assert set(started.models.values()) == {"scripted:MORE_DEBATE"}
    assert [p["persona"] for p in started.scenario["participants"]] == ["A nurse.", "A judge."]
    prompts = [c.messages[0]["content"] for c in one.calls if c.role == "Alice"]
    assert prompts and all("A nurse." in p for p in prompts)  # Alice spoke as the set's persona
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and all(r["status"] == "completed" and r["variant"] for r in rows)
    assert main(argv) == 0
    assert "backend_calls=0" in last_line(capsys)  # finished conferences are never redone


def test_a_bad_variant_is_one_line_before_anything_runs(make_scenario, tmp_path, capsys):
    out = tmp_path / "batch"
    for vary, expected in (("seed=one", "a seed is a whole number"), ("sed=1", "did you mean 'seed'?"),
                           ("model=gpt-4", "unknown model provider")):
        assert main(["run", str(make_scenario(topics=1)), "--vary", vary, "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and expected in err, err
    assert not out.exists()
