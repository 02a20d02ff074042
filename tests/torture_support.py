"""Shared by the torture tests (test_torture_*.py): the tally behind the closing figures, the
commands they run, and the checks every one of them makes.

Figures: each case counts as tried when it starts and as handled when every check of it passed,
so the counts are the test parameters actually run, never constants. They are printed at the end
of the session (pytest_terminal_summary in conftest.py) and kept in pytest's cache under
`moot/torture` (`pytest --cache-show moot/torture`).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Sequence

import pytest

from moot.cli import main
from moot.engine.folder import read_results
from moot.log.transcript import load

ROOT = Path(__file__).resolve().parents[1]
FIGURES = {"fault modes": "fault modes handled", "kills": "kills survived",
           "bad inputs": "bad inputs rejected cleanly", "damaged files": "damaged files recovered",
           "hostile": "hostile texts neutralised"}
TRIED: Counter = Counter()
HANDLED: Counter = Counter()
# the hardening classes of issues 20 and 32 a case belongs to (its figures are printed by class too)
CLASSES = {"signals": "every stop signal is a clean stop", "files": "files written safely and as a set",
           "credentials": "credentials in any URL", "environment": "the environment refusing is exit 3",
           "neutral": "every output neutralises what others wrote",
           "reading": "reading is bounded before it is trusted",
           "turns": "untrusted turns stay untrusted in later prompts",
           "start-up": "one line even when moot cannot start", "out": "odd output places",
           "yaml": "YAML as people write it", "waits": "waits are visible",
           "logprobs": "logprob answers handled one way",
           "paths": "a run folder's contents are data, not paths to follow",
           "one bad file": "one bad file does not take down the others",
           "bundle": "the bundle is a complete, safe copy",
           "typed": "typed input is bounded and checked", "annotations": "annotations written like transcripts",
           "merging": "nothing is merged silently", "cache": "the reply cache tells busy from broken",
           "names": "names that are not UTF-8, and names that collide"}
CLASS_TRIED: Counter = Counter()
CLASS_HANDLED: Counter = Counter()
SECRET = "sk-torture-5f0c9a1e77d24b3c"  # must never reach a file, stdout or stderr


@contextmanager
def case(kind: str, hardening: Optional[str] = None) -> Iterator[None]:
    """One torture case of `kind` (a key of FIGURES), of a `hardening` class (a key of CLASSES)
    if it is one: tried now, handled if the block passes."""
    tried(kind)
    if hardening is not None:
        assert hardening in CLASSES, hardening
        CLASS_TRIED[hardening] += 1
    yield
    handled(kind)
    if hardening is not None:
        CLASS_HANDLED[hardening] += 1


def tried(kind: str) -> None:
    assert kind in FIGURES, kind
    TRIED[kind] += 1


def handled(kind: str, count: int = 1) -> None:
    HANDLED[kind] += count


def figures() -> dict[str, list[int]]:
    return {FIGURES[k]: [HANDLED[k], TRIED[k]] for k in FIGURES if TRIED[k]}


def class_figures() -> dict[str, list[int]]:
    return {f"{k}: {CLASSES[k]}": [CLASS_HANDLED[k], CLASS_TRIED[k]] for k in CLASSES if CLASS_TRIED[k]}


def report_figures(terminalreporter, config) -> None:
    found = figures()
    if not found:
        return
    terminalreporter.section("torture figures")
    for name, (handled, tried) in found.items():
        terminalreporter.write_line(f"{name}: {handled} / {tried}")
    by_class = class_figures()
    if by_class:
        terminalreporter.write_line("of which, by hardening class (issues 20 and 32):")
    for name, (handled, tried) in by_class.items():
        terminalreporter.write_line(f"  {name}: {handled} / {tried}")
    if getattr(config, "cache", None) is not None:  # absent with -p no:cacheprovider
        config.cache.set("moot/torture", {**found, **by_class})


# --- running moot -----------------------------------------------------------------------------
@dataclass
class Ran:
    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]


def moot(*argv: object) -> Ran:
    """`moot ARGV` in this process (the real command code), its exit code and output."""
    out, err = _Tee(), _Tee()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:  # argparse's way out (the console script's exit code)
            code = exc.code
    return Ran(code, out.getvalue(), err.getvalue())


class _Tee:
    """A text stream that is not a terminal (as when output is piped)."""

    def __init__(self) -> None:
        self._parts: list[str] = []

    def write(self, text: str) -> int:
        self._parts.append(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def getvalue(self) -> str:
        return "".join(self._parts)


def moot_process(*argv: object, env_extra: Optional[dict[str, str]] = None, **popen) -> subprocess.Popen:
    """`moot ARGV` as its own process (signals, kills, pipes), output captured as text; `env_extra`
    added to its environment."""
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost", **(env_extra or {})}
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen([sys.executable, "-m", "moot", *map(str, argv)], env=env, text=True, **popen)


# --- checks -----------------------------------------------------------------------------------
def assert_clean(ran: Ran, max_err_lines: Optional[int] = None) -> None:
    """No traceback, no secret, no escape sequence; at most `max_err_lines` lines on stderr."""
    both = ran.out + ran.err
    assert "Traceback" not in both and "Task exception" not in both, ran.err[-3000:]
    assert SECRET not in both
    assert "\x1b" not in ran.out
    if max_err_lines is not None:
        assert len(ran.err_lines) <= max_err_lines, ran.err


def files_of(folder: Path) -> list[Path]:
    return sorted(p for p in Path(folder).rglob("*") if p.is_file())


def assert_no_secret_written(folder: Path) -> None:
    for path in files_of(folder):
        assert SECRET.encode() not in path.read_bytes(), path


def unit_transcripts(folder: Path) -> list[Path]:
    return sorted(p for p in Path(folder).glob("*.jsonl") if p.name != "results.jsonl")


def recorded_signatures(folder: Path) -> set[tuple[str, ...]]:
    """The calls recorded in a run folder's transcripts (each by its messages' texts): finished
    calls, which must never be sent again. Loading is strict: a damaged transcript fails here."""
    found = set()
    for path in unit_transcripts(folder):
        for call in load(path).calls:
            found.add(tuple(m["content"] for m in call.messages))
    return found


def outcome_of(folder: Path) -> dict:
    """What a finished run came to, comparable across interruptions: each unit's prediction and
    explanation, and what every speaker said in order (items: as a sorted list, since an item's
    parallel stages may finish in any order)."""
    rows = read_results(folder)
    said = {}
    for path in unit_transcripts(folder):
        t = load(path)
        assert t.completed, path
        messages = [(m.speaker, m.content) for m in t.messages]
        said[path.name] = messages if t.protocol == "conference" else sorted(messages)
    return {"rows": {k: (r.get("prediction"), r.get("explanation"), r.get("status")) for k, r in rows.items()},
            "said": said}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# The fault server's replies are no labels: every answer is unparsed, which these runs accept
# (they test faults; `max_unparsed: 1`), so an undisturbed run exits 0.
COLA = ("protocol: cola\nmodels: {default: 'openai:fault'}\nretry: {attempts: 2, backoff_s: 0.05, timeout_s: 0.5}\n"
        "max_unparsed: 1\n")
CONFERENCE = """\
title: Torture
task: Decide the questions.
topics: [first question, second question, third question]
moderator: {name: Moderator}
participants: [{name: Alice}, {name: Bob}]
judge: {name: Judge}
models: {default: 'openai:fault'}
limits: {max_rounds_per_topic: 2}
retry: {attempts: 2, backoff_s: 0.05, timeout_s: 2}
"""
ROWS = [("Remote school saves hours of commuting.", "online classes", "favor"),
        ("Remote school is a disaster for kids.", "online classes", "against"),
        ("Schools reopen on Monday.", "online classes", "neutral"),
        ("Taxes fund the roads we all use.", "taxes", "favor"),
        ("Cut taxes now!", "taxes", "against"),
        ("The tax office opens at nine.", "taxes", "neutral")]


def dataset(directory: Path, rows: Sequence[tuple[str, str, str]] = ROWS) -> Path:
    """A small CSV dataset and its spec; returns the spec."""
    lines = ["text,target,label"] + [f'"{t}",{g},{lab}' for t, g, lab in rows]
    write(directory / "data.csv", "\n".join(lines) + "\n")
    return write(directory / "data.yaml", "path: data.csv\nformat: csv\n"
                                          "columns: {text: text, target: target, label: label}\n")


SCRIPTED_COLA = "protocol: cola\nmodels: {default: scripted}\n"


def scripted_batches(directory: Path, *runs: tuple[object, ...]) -> Path:
    """Finished COLA batches on the scripted model over `dataset` in `directory`: one per entry of
    `runs` (its folder's name, then more arguments). Returns `directory`."""
    write(directory / "cola.yaml", SCRIPTED_COLA)
    dataset(directory)
    for name, *extra in runs:
        ran = moot(directory / "cola.yaml", "--dataset", directory / "data.yaml", "--out", directory / name,
                   "--quiet", *extra)
        assert ran.code == 0, ran.err
    return directory


def scenario_files(directory: Path) -> Path:
    """A conference and a COLA scenario on the fault server, and the small dataset, in `directory`."""
    write(directory / "conference.yaml", CONFERENCE)
    write(directory / "cola.yaml", COLA)
    dataset(directory)
    return directory


@pytest.fixture
def files(tmp_path):
    return scenario_files(tmp_path)


def remote(url: str) -> list[str]:
    return ["--base-url", url, "--api-key", SECRET]


# --- a disk that refuses (root only) -------------------------------------------------------------
def require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs (a full or read-only disk) needs root")


@pytest.fixture
def tmpfs(tmp_path):
    """A 1 MiB tmpfs mounted at tmp_path/disk (root only); `remount(options)` changes it."""
    require_root()
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")

    def remount(options: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{options}", str(disk)], check=True)

    yield disk, remount
    subprocess.run(["umount", "-l", str(disk)], check=False)


def drop_root_powers() -> None:
    """In the child: root without the capabilities that let it ignore file permissions."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl")
