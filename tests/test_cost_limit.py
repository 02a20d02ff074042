"""A cost limit (issue 31, part 2): every call priced and recorded, a run stopped before its spend
could exceed --max-cost, continued by the same command with a higher limit; price files checked."""

from __future__ import annotations

import json
import re

import pytest

from backend_support import loopback_only  # noqa: F401
from fault_server import FaultServer
from moot.models.price import Price
from moot.models.prices import PriceFileError, read_price_file
from torture_support import COLA, ROWS, assert_clean, dataset, moot, read_jsonl, remote, unit_transcripts, write

PRICE = ("--price", 1000, 2000)  # dollars per million tokens: a call of ~300 prompt tokens costs cents


def run(directory, server, *extra, concurrency=1):
    return moot(directory / "cola.yaml", "--dataset", directory / "data.yaml", "--out", directory / "run", "--quiet",
                "--concurrency", concurrency, *remote(server.url), *PRICE, *extra)


def calls(directory):
    return [e for path in unit_transcripts(directory / "run") for e in read_jsonl(path) if e["type"] == "call"]


def spend(directory):
    return json.loads((directory / "run" / "run.json").read_text())["spend_usd"]


def test_a_run_stops_before_its_limit_and_continues_with_a_higher_one(tmp_path):
    write(tmp_path / "cola.yaml", COLA)
    dataset(tmp_path)
    with FaultServer("ok") as server:
        stopped = run(tmp_path, server, "--max-cost", 5)
        sent = len(server.requests)
        assert stopped.code == 1, stopped.err
        assert_clean(stopped)
        assert stopped.err.startswith("stopped early: error: the cost limit of $5 is reached") and len(stopped.err_lines) == 1
        assert stopped.err.count("continue") == 1 and "a higher --max-cost" in stopped.err
        spent = json.loads((tmp_path / "run" / "run.json").read_text())["spend_usd"]
        recorded = calls(tmp_path)
        assert 0 < spent <= 5 and len(recorded) == sent, (len(recorded), sent)
        assert all(c["cost_usd"] == pytest.approx(Price(prompt=1000, completion=2000).cost(
            c["usage"]["prompt_tokens"], c["usage"]["completion_tokens"])) for c in recorded)
        again = run(tmp_path, server, "--max-cost", 5)  # the same limit: the spend stays within it
        assert again.code == 1 and json.loads((tmp_path / "run" / "run.json").read_text())["spend_usd"] <= 5
        done = run(tmp_path, server, "--max-cost", 1000)
    assert done.code == 0, done.err
    assert len((tmp_path / "run" / "results.jsonl").read_text().splitlines()) == len(ROWS)
    assert all(c["cost_usd"] is not None for c in calls(tmp_path))


def test_the_calls_costs_sum_to_the_runs_spend_when_calls_run_concurrently(tmp_path):
    """A unit stopped by the limit while its other calls are in flight (COLA's parallel stages, or
    calls asked before their turn is recorded) waits for them and records each: every call paid
    for is in the log. run.json keeps spend_usd rounded to a millionth of a dollar per invocation,
    hence the tolerance of a few millionths over three invocations."""
    write(tmp_path / "cola.yaml", COLA)
    dataset(tmp_path)
    with FaultServer("ok") as server:
        for limit in (5, 10, 1000):
            ran = run(tmp_path, server, "--max-cost", limit, concurrency=4)
            assert_clean(ran)
            recorded = calls(tmp_path)
            assert sum(c["cost_usd"] for c in recorded) == pytest.approx(spend(tmp_path), abs=5e-6), limit
            assert spend(tmp_path) <= limit
    assert ran.code == 0, ran.err


def test_a_cost_limit_needs_every_models_price(tmp_path):
    write(tmp_path / "cola.yaml", COLA)
    dataset(tmp_path)
    ran = moot(tmp_path / "cola.yaml", "--dataset", tmp_path / "data.yaml", "--out", tmp_path / "run",
               "--base-url", "http://127.0.0.1:9/v1", "--max-cost", 1)
    assert ran.code == 2 and "--max-cost: no price for openai:fault" in ran.err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("text, where", [
    ("openai:gpt-4o-mini: {prompt: 0.15, completion: 0.6}\nopnai:gpt-4o: {prompt: 1, completion: 2}\n",
     ":2: opnai:gpt-4o: not a known model"),
    ("openai:gpt-4o-mini: {prompt: -0.15, completion: 0.6}\n", ":1: openai:gpt-4o-mini.prompt: a price cannot be negative"),
    ("openai:gpt-4o-mini:\n  prompt: 0.15\n", ":1: openai:gpt-4o-mini.completion: required key is missing"),
])
def test_a_bad_price_file_is_one_line_naming_file_line_and_key(tmp_path, text, where):
    path = write(tmp_path / "prices.yaml", text)
    with pytest.raises(PriceFileError) as caught:
        read_price_file(path)
    assert str(caught.value).startswith(str(path)) and where in str(caught.value)
    ran = moot("cola", "--input", "text=x", "--input", "target=y", "--prices", path, "--out", tmp_path / "run")
    assert ran.code == 2 and len(ran.err.strip().splitlines()) == 1 and where in ran.err


def test_a_price_file_prices_by_spec_and_the_batch_share_halves(tmp_path):
    prices = read_price_file(write(tmp_path / "p.yaml", "openai:m: {prompt: 2, completion: 4, batch: 0.5}\n"))
    assert prices["openai:m"].cost(1_000_000, 1_000_000) == 6
    assert prices["openai:m"].cost(1_000_000, 1_000_000, batch=True) == 3


EXPERIMENT = """experiment: budget
arms:
  - {name: a, scenario: cola.yaml}
  - {name: b, scenario: cola.yaml, set: {generation.seed: 7}}
datasets: [data.yaml]
prices: {prompt: 1000, completion: 2000}
max_cost: 8
"""


def experiment(directory, server, *extra):
    return moot(directory / "exp.yaml", "--out", directory / "exp", "--quiet", "--concurrency", 4,
                *remote(server.url), *extra)


def cell_spend(directory):
    """Each cell's run.json spend_usd, and the cost_usd of the calls its transcripts hold."""
    found = {}
    for meta in (directory / "exp").rglob("run.json"):
        recorded = [e for path in unit_transcripts(meta.parent) for e in read_jsonl(path) if e["type"] == "call"]
        found[meta.parent.name + str(meta.parent)] = (json.loads(meta.read_text()).get("spend_usd", 0.0),
                                                      sum(c["cost_usd"] for c in recorded))
    return found


def test_an_experiments_cost_limit_holds_for_all_its_cells_and_a_higher_one_continues_it(tmp_path):
    write(tmp_path / "cola.yaml", COLA)
    dataset(tmp_path)
    write(tmp_path / "exp.yaml", EXPERIMENT)
    with FaultServer("ok") as server:
        stopped = experiment(tmp_path, server)
        assert stopped.code == 1, stopped.err
        assert_clean(stopped)
        assert stopped.err_lines == [stopped.err_lines[0]] and stopped.err.startswith(
            "stopped before the cost limit of $8: $") and "a higher --max-cost" in stopped.err
        spends = cell_spend(tmp_path)
        assert 0 < sum(s for s, _ in spends.values()) <= 8
        assert all(s == pytest.approx(c, abs=5e-6) for s, c in spends.values())
        cells = json.loads((tmp_path / "exp" / "experiment.json").read_text())["cells"]
        assert any(c["status"] != "completed" for c in cells)
        done = experiment(tmp_path, server, "--max-cost", 100)
        assert done.code == 0, done.err
        cells = json.loads((tmp_path / "exp" / "experiment.json").read_text())["cells"]
        assert [c["status"] for c in cells] == ["completed", "completed"]
        assert all(s == pytest.approx(c, abs=5e-6) for s, c in cell_spend(tmp_path).values())
        each = max(s for s, _ in cell_spend(tmp_path).values())
        write(tmp_path / "exp.yaml", EXPERIMENT.replace("datasets:", "  - {name: c, scenario: cola.yaml, set: "
                                                                      "{generation.seed: 9}}\ndatasets:"))
        sent = len(server.requests)
        more = experiment(tmp_path, server, "--max-cost", round(each * 1.5, 4))  # over one cell's, under both
        assert more.code == 1 and more.err.startswith("stopped before the cost limit") and len(server.requests) == sent


def plan_cost(ran):
    """The total cost --plan printed (None: not priced)."""
    found = re.search(r"tokens left, cost ~?([0-9.]+)", ran.out)
    return float(found.group(1)) if found else None


def test_plan_prices_each_model_from_the_price_sources_and_at_the_batch_rate(tmp_path):
    write(tmp_path / "cola.yaml", COLA)
    dataset(tmp_path)
    write(tmp_path / "exp.yaml", EXPERIMENT.replace("prices: {prompt: 1000, completion: 2000}\n", ""))
    plan = ("run", tmp_path / "exp.yaml", "--out", tmp_path / "exp", "--plan")
    unpriced = moot(*plan)
    assert unpriced.code == 0 and plan_cost(unpriced) is None and "| ? |" in unpriced.out
    given = plan_cost(moot(*plan, "--price", 1000, 2000))
    filed = plan_cost(moot(*plan, "--prices", write(tmp_path / "p.yaml", "openai:fault: {prompt: 1000, completion: 2000}\n")))
    other = moot(*plan, "--prices", write(tmp_path / "q.yaml", "openai:other: {prompt: 1000, completion: 2000}\n"))
    in_file = plan_cost(moot("run", write(tmp_path / "priced.yaml", EXPERIMENT), "--out", tmp_path / "exp", "--plan"))
    assert given and given == filed == in_file and plan_cost(other) is None
    half = plan_cost(moot(*plan, "--price", 1000, 2000, "--batch"))  # openai has a batch API: half price
    assert half == pytest.approx(given / 2, abs=1e-4)


def test_the_documented_price_file_is_one():
    from pathlib import Path

    prices = read_price_file(Path(__file__).resolve().parents[1] / "docs" / "prices.yaml")
    assert prices["openai:gpt-4o"].batch == 0.5 and prices["openai:gpt-4o-mini"].cost(1_000_000, 0) == 0.15
