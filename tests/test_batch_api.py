"""`--batch` through a loopback server (tests/batch_server.py) speaking OpenAI's Files and Batches
endpoints and Anthropic's Message Batches, which runs every line on llama-server serving the
embedded model (its /v1/chat/completions and /v1/messages): for either provider the replies equal
direct calls', a multi-turn protocol takes one batch per turn across its items, a rerun calls
nothing, a killed run re-attaches to its batch, and each thing a provider can get wrong is one line
with nothing lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from batch_server import BatchServer
from moot.cli import main
from test_llama_server import serving

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
SHORT = "generation: {temperature: 0.0, max_tokens: 6, seed: 0}"


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """One slot: each request is computed alone, so a reply does not depend on what ran beside it."""
    with serving(tmp_path_factory.mktemp("llama-server"), "chat", parallel=1, ctx=4096, chat_template="gemma") as found:
        yield found


@dataclass
class Provider:
    """The provider a test runs with; `at(url)` is the command line naming its model at `url`."""

    name: str
    monkeypatch: pytest.MonkeyPatch

    def at(self, url: str) -> list[str]:
        if self.name == "openai":
            return ["--model", "openai:gemma", "--base-url", url]
        self.monkeypatch.setenv("ANTHROPIC_BASE_URL", url)  # --base-url is OpenAI's
        return ["--model", "anthropic:gemma"]


@pytest.fixture(params=["openai", "anthropic"])
def provider(request, monkeypatch):
    return Provider(request.param, monkeypatch)


def scenario(folder: Path, stages: bool = True) -> Path:
    """COLA with short replies; without its analysts and debaters (`stages` False) one call an item."""
    text = (ROOT / "scenarios" / "cola.yaml").read_text(encoding="utf-8")
    text = text.replace("generation: {temperature: 0.0, max_tokens: 256, seed: 0}", SHORT)
    if not stages:
        text = text.replace("experts: [linguist, domain, social]", "experts: []").replace("debate: true", "debate: false")
    path = folder / ("cola_short.yaml" if stages else "cola_judger.yaml")
    path.write_text(text, encoding="utf-8")
    return path


def command(source: Path, model: list[str], out: Path, limit: int, batch: bool = True) -> list[str]:
    return ["run", str(source), "--dataset", "demo-stance", "--limit", str(limit), *model, "--out", str(out),
            "--quiet", *(["--batch"] if batch else [])]


def made(server: BatchServer) -> int:
    return len(server.batches) + len(server.message_batches)


def replies(folder: Path) -> dict[str, list[tuple[str, str]]]:
    """Each item's calls as (cache key, reply), in a fixed order."""
    found = {}
    for path in sorted(folder.glob("stance-*.jsonl")):
        events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        found[path.stem] = sorted((e["key"], e["reply"]) for e in events if e["type"] == "call")
    return found


def journal(folder: Path) -> list[dict]:
    path = folder / "batches" / "journal.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def test_a_cola_run_through_batches_equals_direct_calls_in_one_batch_per_turn(llama, tmp_path, provider):
    source = scenario(tmp_path)
    with BatchServer(llama.url) as server:
        assert main(command(source, provider.at(server.url), tmp_path / "batched", 2)) in (0, 4)
        assert made(server) == 3  # analysts, debaters, judger: one batch each for both items
        assert server.executed == 14
        assert main(command(source, provider.at(server.url), tmp_path / "batched", 2)) in (0, 4)  # nothing sent
        assert made(server) == 3 and server.executed == 14
    assert main(command(source, provider.at(llama.url), tmp_path / "direct", 2, batch=False)) in (0, 4)
    assert replies(tmp_path / "batched") == replies(tmp_path / "direct")
    assert len(replies(tmp_path / "batched")) == 2
    assert [r["event"] for r in journal(tmp_path / "batched")] == ["uploaded", "submitted", "downloaded"] * 3
    rows = [json.loads(line) for line in (tmp_path / "batched" / "results.jsonl").read_text().splitlines()]
    direct = [json.loads(line) for line in (tmp_path / "direct" / "results.jsonl").read_text().splitlines()]
    assert sorted((r["id"], r["prediction"]) for r in rows) == sorted((r["id"], r["prediction"]) for r in direct)


@pytest.mark.parametrize("faults, said, executed", [
    ({"drop": 1, "reorder": True, "unknown": True},
     ["1 reply for requests moot never sent (ignored)", "came back out of order",
      "missing from its output): 1 of 3 requests came back without a reply; they go into the next wave"], 4),
    ({"expire": True}, ["(expired): 2 of 3 requests came back without a reply; they go into the next wave"], 3),
])
def test_lines_missing_reordered_unknown_or_expired_are_one_line_each_and_go_into_the_next_wave(
        llama, tmp_path, capsys, provider, faults, said, executed):
    source = scenario(tmp_path, stages=False)
    with BatchServer(llama.url) as server:
        server.faults = faults
        assert main(command(source, provider.at(server.url), tmp_path / "run", 3)) in (0, 4)
        assert made(server) == 2 and server.executed == executed  # the lost ones in a second wave
    err = capsys.readouterr().err
    for line in said:
        assert sum(line in shown for shown in err.splitlines()) == 1, err
    assert len(replies(tmp_path / "run")) == 3


REFUSED = "the provider refused a batch"


@pytest.mark.parametrize("name, fault, said", [
    ("openai", "reject", "stopped early: error: batch batch-2 was rejected by the provider: line 1: this model does "
                         "not take batches (run the same command again to continue; finished work is kept)"),
    ("openai", "reject_create", f"stopped early: error: {REFUSED} (BadRequestError: Error code: 400 - the input file "
                                "is not valid) (run the same command again"),
    ("anthropic", "reject_create", f"stopped early: error: {REFUSED} (AnthropicStatusError: HTTP 400: "
                                   "invalid_request_error: the requests are not valid) (run the same command again"),
])
def test_a_rejected_batch_stops_the_run_in_one_line_and_the_same_command_continues_it(llama, tmp_path, capsys,
                                                                                       monkeypatch, name, fault, said):
    source, model = scenario(tmp_path, stages=False), Provider(name, monkeypatch)
    with BatchServer(llama.url) as server:
        server.faults = {fault: True}
        code = main(command(source, model.at(server.url), tmp_path / "run", 2))
        shown = capsys.readouterr()
        assert code == 1 and "Traceback" not in shown.err
        assert sum(line.strip().startswith(said) for line in (shown.out + shown.err).splitlines()) == 1, shown
        assert server.executed == 0
        assert main(command(source, model.at(server.url), tmp_path / "run", 2)) in (0, 4)
        assert server.executed == 2
    assert len(replies(tmp_path / "run")) == 2


def test_a_killed_run_re_attaches_to_its_batch_and_sends_nothing_twice(llama, tmp_path, provider):
    source = scenario(tmp_path, stages=False)
    out = tmp_path / "run"
    with BatchServer(llama.url) as server:
        argv = command(source, provider.at(server.url), out, 3)
        child = subprocess.Popen([sys.executable, "-m", "moot", *argv], env={**os.environ, "PYTHONPATH": str(ROOT)},
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not any(r["event"] == "submitted" for r in journal(out)) and time.monotonic() < deadline:
            time.sleep(0.05)
        child.kill()
        child.wait()
        assert [r["event"] for r in journal(out)] == ["uploaded", "submitted"]
        assert main(argv) in (0, 4)
        assert made(server) == 1 and server.executed == 3
    assert [r["event"] for r in journal(out)] == ["uploaded", "submitted", "downloaded"]
    assert len(replies(out)) == 3
