"""Torture: YAML as people write it — merge keys (`<<: *base`, `<<: [*a, *b]`) with explicit
overrides, the usual template-plus-override pattern, in scenarios and dataset specs.

YAML's merge semantics apply: a key written in the mapping overrides the merged one, the first of
several merged mappings wins, and an error in a merged key names the line it is written on. A key
written twice in one mapping is still an error naming its second line; a merge of something that
is not a mapping is one line; merge keys do not get around the bounds on alias expansion.
"""

from __future__ import annotations

import pytest

from moot.engine.folder import read_results
from moot.log.transcript import load
from moot.scenario.load import load_scenario
from torture_support import assert_clean, case, dataset, moot, write

HEAD = """\
title: Merge keys
task: Decide the question.
topics: [the question]
moderator: {name: Moderator}
judge: {name: Judge}
models: {default: scripted}
limits: {max_rounds_per_topic: 1}
"""
OVERRIDE = HEAD + """\
participants:
  - &person
    name: Alice
    persona: A careful tester who reads everything twice.
  - <<: *person
    name: Bob
  - <<: *person
    name: Carol
    persona: A hasty tester.
"""
SEVERAL = HEAD + """\
participants:
  - &first {name: Alice, persona: First persona.}
  - &second {name: Bob, persona: Second persona., model: "scripted:AGREEMENT"}
  - <<: [*first, *second]
    name: Carol
"""


def test_a_merge_then_an_override_is_the_override(tmp_path):
    path = write(tmp_path / "s.yaml", OVERRIDE)
    with case("bad inputs", "yaml"):
        assert moot("validate", path).code == 0
        people = [(p.name, p.persona) for p in load_scenario(path).participants]
        assert people == [("Alice", "A careful tester who reads everything twice."),
                          ("Bob", "A careful tester who reads everything twice."), ("Carol", "A hasty tester.")]
        ran = moot(path, "--out", tmp_path / "run", "--quiet")
        assert ran.code == 0, ran.err
        assert_clean(ran, max_err_lines=0)
        [row] = read_results(tmp_path / "run").values()
        spoke = {m.speaker for m in load(tmp_path / "run" / row["transcript"]).messages}
        assert {"Alice", "Bob", "Carol"} <= spoke


def test_several_merged_mappings_the_first_wins_and_the_mapping_wins_over_all(tmp_path):
    path = write(tmp_path / "s.yaml", SEVERAL)
    with case("bad inputs", "yaml"):
        carol = load_scenario(path).participants[2]
        assert (carol.name, carol.persona, carol.model) == ("Carol", "First persona.", "scripted:AGREEMENT")


# name -> (text, the phrase of the one line, the line it names)
REFUSED = {
    "a key written twice beside a merge": (OVERRIDE.replace("    name: Bob\n", "    name: Bob\n    name: Dave\n"),
                                           "participants[1].name: duplicate key", 14),
    "a key written twice, no merge": (HEAD + "participants:\n  - {name: Alice}\n  - name: Bob\n    name: Eve\n",
                                      "participants[1].name: duplicate key", 11),
    "an unknown key merged in": (OVERRIDE.replace("    persona: A careful", "    colour: red\n    persona: A careful"),
                                 "participants[0].colour: unknown key", 11),
    "a merge of a scalar": (HEAD + "participants:\n  - <<: 5\n    name: Bob\n",
                            "expected a mapping or list of mappings for merging", 9),
    "an alias bomb through merge keys": (
        "a: &a {k0: x, k1: x, k2: x, k3: x, k4: x, k5: x, k6: x, k7: x, k8: x}\n"
        + "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
        + "m: {<<: *a, name: x}\n", "nested aliases", None),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_yaml_refuses_is_still_one_line_naming_the_line(name, tmp_path):
    text, phrase, line = REFUSED[name]
    path = write(tmp_path / "s.yaml", text)
    with case("bad inputs", "yaml"):
        ran = moot(path, "--out", tmp_path / "run")
        assert ran.code == 2, ran.err
        assert len(ran.err_lines) == 1 and phrase in ran.err, ran.err
        if line is not None:
            assert ran.err.startswith(f"error: {path}:{line}: "), ran.err
        assert_clean(ran)
        assert not (tmp_path / "run").exists()


def test_a_dataset_spec_takes_merge_keys_too(tmp_path):
    dataset(tmp_path)
    write(tmp_path / "data.yaml", "path: data.csv\nformat: csv\n"
                                  "columns:\n  <<: {text: target, target: target, label: label}\n  text: text\n")
    write(tmp_path / "cola.yaml", "protocol: cola\nmodels: {default: scripted}\n")
    with case("bad inputs", "yaml"):
        ran = moot(tmp_path / "cola.yaml", "--dataset", tmp_path / "data.yaml", "--out", tmp_path / "run", "--quiet")
        assert ran.code == 0, ran.err
        rows = read_results(tmp_path / "run")
        assert len(rows) == 6
        inputs = {load(tmp_path / "run" / r["transcript"]).started.inputs["text"] for r in rows.values()}
        assert "Cut taxes now!" in inputs  # the text column, as the mapping says over the merged one
