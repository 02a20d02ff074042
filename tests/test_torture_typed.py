"""Torture: typed input is bounded and checked (issue 32, class 4). A person at a seat types, as
bytes on the real command's stdin: digits outside the options, other digit characters, thousands
of digits, bytes that are not UTF-8, a turn larger than the transcript reader takes. Each is
refused and asked again, never a crash, and the run folder always reads. Input that ends inside a
free turn stops the run at that turn, which the same command continues. A seat spec is checked
in full before anything is written."""

from __future__ import annotations

import subprocess
import sys

import pytest
from torture_support import Ran, assert_clean, case, moot, scripted_batches

from moot.kit.seats import MAX_TYPED
from moot.log.annotations import read_ratings
from moot.log.events import Human
from moot.log.transcript import load

ARGV = ["debate", "--model", "scripted", "--input", "text=Cats beat dogs.", "--human", "agent_1", "--quiet"]
LATER = b"Round one.\n.\nagainst\nRound two.\n.\nfavor\n"  # the person's rounds 1 and 2


def typed(out, stdin: bytes) -> Ran:
    """The real `moot debate` with agent_1's seat at the terminal, fed `stdin` as bytes."""
    done = subprocess.run([sys.executable, "-m", "moot", *ARGV, "--out", str(out)], input=stdin,
                          capture_output=True, timeout=120)
    return Ran(done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"))


def answers(out) -> list[list[str]]:
    (path,) = out.glob("item-*.jsonl")
    return [h.answers for h in load(path).of_type(Human)]  # loads strictly: the folder reads


CLOSED = {"outside the options": b"4", "zero": b"0", "superscript two": "\u00b2".encode(),
          "arabic-indic three": "\u0663".encode(), "fullwidth one": "\uff11".encode(), "5000 digits": b"9" * 5000,
          "latin-1": "caf\u00e9".encode("latin-1"), "bare continuation bytes": b"\x80\xbf",
          "too long": b"a" * (MAX_TYPED + 10)}


@pytest.mark.parametrize("name", sorted(CLOSED))
def test_a_bad_closed_answer_is_asked_again(tmp_path, name):
    with case("bad inputs", "typed"):
        ran = typed(tmp_path / "d", b"Round zero.\n.\n" + CLOSED[name] + b"\nagainst\n" + LATER)
        assert ran.code == 0, ran.err
        assert_clean(ran, max_err_lines=0)
        assert "(that does not read:" in ran.out
        first = answers(tmp_path / "d")[0]
        assert first[0] == "Round zero." and first[-1] == "against" and len(first) == 3
        assert len(first[1].encode()) <= MAX_TYPED  # what was refused is recorded, bounded


FREE = {"one line too long": b"x" * (MAX_TYPED + 1) + b"\n", "many lines too long": (b"y" * 1000 + b"\n") * 300,
        "latin-1": "d\u00e9j\u00e0 vu\n".encode("latin-1")}


@pytest.mark.parametrize("name", sorted(FREE))
def test_a_free_turn_that_cannot_be_recorded_is_asked_again(tmp_path, name):
    with case("bad inputs", "typed"):
        ran = typed(tmp_path / "d", FREE[name] + b".\nRound zero.\n.\nagainst\n" + LATER)
        assert ran.code == 0, ran.err
        assert_clean(ran, max_err_lines=0)
        assert "(that does not read:" in ran.out
        first = answers(tmp_path / "d")[0]
        assert first[1:] == ["Round zero.", "against"] and len(first[0].encode()) <= MAX_TYPED


@pytest.mark.parametrize("where", ["inside a free turn", "at a closed question", "before the first turn"])
def test_input_that_ends_stops_the_run_at_that_turn_and_the_command_continues_it(tmp_path, where):
    with case("bad inputs", "typed"):
        cut = {"inside a free turn": b"Round zero.\n.\nagainst\nRound one, half typed\n",
               "at a closed question": b"Round zero.\n.\nagainst\nRound one.\n.\n",
               "before the first turn": b""}[where]
        ran = typed(tmp_path / "d", cut)
        assert ran.code not in (0, None), ran.err
        assert_clean(ran, max_err_lines=2)
        assert "the input ended" in ran.err and "run the same command again" in ran.err
        done = answers(tmp_path / "d")
        assert "Round one, half typed" not in str(done)  # nothing half typed is taken
        again = typed(tmp_path / "d", (b"" if done else b"Round zero.\n.\nagainst\n") + LATER)  # a turn is whole
        assert again.code == 0, again.err
        assert [a[-1] for a in answers(tmp_path / "d")] == ["against", "against", "favor"]


@pytest.mark.parametrize("spec", ["agent_1:nan:model", "agent_1:inf", "agent_1:-1:skip", "agent_1:0", "agent_1:5:later",
                                  "agent_1:soon", ":5", "agent_9"])
def test_a_bad_seat_spec_is_one_line_before_anything_is_written(tmp_path, spec):
    with case("bad inputs", "typed"):
        ran = moot("debate", "--model", "scripted", "--input", "text=Cats.", "--human", spec, "--out", tmp_path / "d")
        assert ran.code == 2, ran.err
        assert_clean(ran, max_err_lines=1)
        assert "--human" in ran.err and not (tmp_path / "d").exists()


@pytest.mark.parametrize("name", ["latin-1", "too long"])
def test_a_rater_name_that_cannot_be_recorded_is_asked_again(tmp_path, name):
    with case("bad inputs", "typed"):
        run = scripted_batches(tmp_path, ("run",)) / "run"
        bad = {"latin-1": "b\u00e9b".encode("latin-1"), "too long": b"b" * (MAX_TYPED + 1)}[name]
        done = subprocess.run([sys.executable, "-m", "moot", "annotate", str(run), "--limit", "1"],
                              input=bad + b"\nbob\nfavor\n", capture_output=True, timeout=120)
        ran = Ran(done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"))
        assert ran.code == 0, ran.err
        assert_clean(ran, max_err_lines=0)
        assert "(that does not read:" in ran.out
        assert [(r.rater, r.value) for r in read_ratings(run)] == [("bob", "favor")]
