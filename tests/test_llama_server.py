"""Conformance of moot with llama.cpp's own llama-server (`moot llama-server`), built here from a
registry package and serving the embedded Gemma GGUF on loopback: every protocol as a base model
(documents through /v1/completions, closed answers read from the server's C++ log-probabilities),
the chat path with a chat template, a pool of two servers, and a server killed mid-run and
started again. CI builds the server first (.ci/run); elsewhere these tests need
`moot llama-server --build` once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from moot.cli import main
from moot.models.backends.local.extra_buffers import choose
from moot.models.backends.local.llama_server import LlamaServer
from moot.models.backends.local.client import default_model_path

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]


def server_binary() -> Path:
    found = os.environ.get("MOOT_LLAMA_SERVER")
    if found and Path(found).is_file():
        return Path(found)
    if os.environ.get("CI"):
        pytest.fail("CI builds llama-server before the tests (.ci/run: moot llama-server --build)")
    pytest.skip("llama-server is not built here: run `moot llama-server --build` once")


def serving(tmp: Path, name: str, **kwargs) -> LlamaServer:
    path = default_model_path()
    return LlamaServer(path, repack=choose("auto", path).use, log=tmp / f"{name}.log", server=server_binary(),
                       **kwargs)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serving(tmp_path_factory.mktemp("llama-server"), "base", parallel=2, ctx=8192) as found:
        yield found


def as_base(scenario: Path, folder: Path) -> Path:
    """`scenario` with the server's model declared a base model on llama-server (turns carry the
    embedded model's generation controls)."""
    copy = folder / f"{scenario.stem}_base.yaml"
    copy.write_text(scenario.read_text(encoding="utf-8") + "\nbackends: {openai: {kind: base, server: llama-server}}\n",
                    encoding="utf-8")
    return copy


def events_of(folder: Path) -> list[dict]:
    return [json.loads(line) for path in sorted(folder.rglob("*.jsonl")) if path.name != "results.jsonl"
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def results_of(folder: Path) -> list[dict]:
    path = folder / "results.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def closed_answers(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "call" and e.get("kind") in ("choice", "score")]


RUNS = {  # protocol -> (scenario, the rest of the command line)
    "cola": ("cola", ["--dataset", "demo-stance", "--limit", "2"]),
    "s2mad": ("s2mad", ["--dataset", "demo-rumour-veracity", "--limit", "1"]),
    "negotiation": ("negotiation", ["--dataset", "demo-sentiment", "--limit", "2"]),
    "debate": ("debate", ["--dataset", "demo-stance", "--limit", "2"]),
    "chateval": ("chateval", ["--dataset", "demo-preference", "--limit", "1"]),
}


@pytest.mark.parametrize("protocol", sorted(RUNS))
def test_each_item_protocol_reads_its_closed_answers_from_llama_server(server, tmp_path, capsys, protocol):
    scenario, rest = RUNS[protocol]
    out = tmp_path / "run"
    code = main([str(as_base(ROOT / "scenarios" / f"{scenario}.yaml", tmp_path)), *rest, "--model", "openai:gemma",
                 "--base-url", server.url, "--out", str(out), "--quiet"])
    assert code == 0, capsys.readouterr().err
    results = results_of(out)
    assert results and all(r["status"] == "completed" and r["prediction"] for r in results)
    events = events_of(out)
    answers = closed_answers(events)
    # Read from the server's log-probabilities, or (the documented behaviour when the reply does not
    # begin with an option: two slots batch requests as they arrive, so an item's tokens can differ
    # from run to run) asked again another way, with the reason recorded; for no other reason.
    fell_back = [a for a in answers if a["detail"]["method"] != "top_logprobs"]
    assert answers and len(fell_back) < len(answers), {a["detail"].get("note") for a in answers}
    assert all("of the server's top log-probabilities" in str(a["detail"].get("note")) for a in fell_back), \
        {a["detail"].get("note") for a in fell_back}
    turns = [e for e in events if e["type"] == "call" and e.get("kind") == "continue"]
    assert turns and not any("not applied" in str((t.get("detail") or {}).get("note")) for t in turns)


def test_the_conference_and_the_judge_alone_read_theirs_from_llama_server(server, tmp_path, capsys):
    scenario = as_base(ROOT / "scenarios" / "drug_policy.yaml", tmp_path)
    out = tmp_path / "conference"
    assert main([str(scenario), "--model", "openai:gemma", "--base-url", server.url, "--out", str(out),
                 "--quiet"]) == 0, capsys.readouterr().err
    events = events_of(out)
    assert events[-1]["type"] == "run_finished" and events[-1]["status"] == "completed"
    answers = closed_answers(events)
    assert {a["role"] for a in answers} >= {"Judge", "Evaluator"}
    assert all(a["detail"]["method"] == "top_logprobs" for a in answers)
    scores = [a["detail"]["expected"] for a in answers if a["kind"] == "score"]
    assert len(set(round(s, 3) for s in scores)) > 1  # not one constant score
    judged = tmp_path / "judge"
    assert main(["judge-eval", "demo-stance", "--task", "stance", "--scenario", str(scenario), "--limit", "3",
                 "--model", "openai:gemma", "--base-url", server.url, "--out", str(judged), "--quiet"]) == 0
    assert len(results_of(judged)) == 3
    assert all(a["detail"]["method"] == "top_logprobs" for a in closed_answers(events_of(judged)))


def test_the_chat_path_with_a_chat_template(tmp_path, capsys):
    """The same GGUF served as a chat model (llama-server's built-in Gemma template): every role
    through /v1/chat/completions, the judger's letter read from the chat reply's top
    log-probabilities, or (where they cannot tell: a chat reply cannot be prefilled) asked as
    structured output, which the server's grammar keeps valid: never left unparsed."""
    scenario = tmp_path / "cola_likelihood.yaml"
    scenario.write_text((ROOT / "scenarios" / "cola.yaml").read_text(encoding="utf-8")
                        .replace("choice: auto", "choice: likelihood"), encoding="utf-8")
    with serving(tmp_path, "chat", chat_template="gemma", ctx=4096) as chat:
        out = tmp_path / "run"
        code = main([str(scenario), "--dataset", "demo-stance", "--limit", "1", "--model", "openai:gemma",
                     "--base-url", chat.url, "--out", str(out), "--quiet"])
    assert code == 0, capsys.readouterr().err
    calls = [e for e in events_of(out) if e["type"] == "call"]
    assert calls and all(c["kind"] in ("chat", "choice") for c in calls)
    judged = [c for c in calls if c["role"] == "judger"]
    assert len(judged) == 1 and all(c["detail"]["method"] in ("top_logprobs", "structured") for c in judged)
    assert all(r["prediction"] != "unparsed" for r in results_of(out))


def served_tokens(server: LlamaServer) -> float:
    """The prompt tokens a server has processed so far (its /metrics)."""
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
            f"http://127.0.0.1:{server.port}/metrics", timeout=5) as answer:
        text = answer.read().decode()
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith("llamacpp:prompt_tokens_total"))


def test_a_pool_of_two_servers_shares_the_calls(tmp_path, capsys):
    with serving(tmp_path, "one", ctx=4096, threads=1, metrics=True) as one, \
            serving(tmp_path, "two", ctx=4096, threads=1, metrics=True) as two:
        out = tmp_path / "run"
        code = main([str(as_base(ROOT / "scenarios" / "cola.yaml", tmp_path)), "--dataset", "demo-stance",
                     "--limit", "2", "--concurrency", "2", "--model", "openai:gemma", "--base-url", one.url,
                     "--base-url", two.url, "--out", str(out), "--quiet"])
        assert code == 0, capsys.readouterr().err
        assert served_tokens(one) > 0 and served_tokens(two) > 0
    assert len(results_of(out)) == 2


def test_a_server_killed_mid_run_then_started_again_continues_the_run_and_loses_nothing(tmp_path):
    scenario = as_base(ROOT / "scenarios" / "cola.yaml", tmp_path)
    with serving(tmp_path, "first", ctx=4096) as first:
        port, url = first.port, first.url
        out = tmp_path / "run"
        command = [sys.executable, "-m", "moot", str(scenario), "--dataset", "demo-stance", "--limit", "4",
                   "--model", "openai:gemma", "--base-url", url, "--out", str(out), "--quiet"]
        run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 600  # a turn under llama-server's controls is a full one: minutes on a busy machine
        while not results_of(out) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert first.proc is not None
        first.proc.send_signal(signal.SIGKILL)  # the server dies under the run
        _, err = run.communicate(timeout=300)
    assert run.returncode == 1, err
    done = results_of(out)
    assert 1 <= len(done) < 4
    with serving(tmp_path, "again", ctx=4096, port=port):
        again = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    finished = results_of(out)
    assert len(finished) == 4 and len({r["id"] for r in finished}) == 4
    assert [r for r in finished if r["id"] in {d["id"] for d in done}] == done  # kept as they were
