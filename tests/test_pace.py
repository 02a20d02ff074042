"""Adaptive concurrency per endpoint (moot.models.pace, issue 31 part 3): fewer calls in flight on
429s and timeouts, more as answers return, a Retry-After pausing the whole endpoint; and a COLA run
against a loopback server with a rate limit (tests/fault_server.py) that ends with no failed unit
and its pace recorded in run.json. Counts are asserted, never timings."""

from __future__ import annotations

import asyncio
import json

import pytest

from backend_support import loopback_only  # noqa: F401
from fault_server import FaultServer
from moot.models.pace import Pace
from torture_support import COLA, ROWS, assert_clean, dataset, moot, remote, write


class Throttled(Exception):
    """An HTTP 429 as a client library raises it: a status and the server's headers."""

    def __init__(self, after: str = "0.05"):
        super().__init__("429")
        self.status_code, self.response = 429, type("R", (), {"headers": {"retry-after": after}})()


async def through(pace: Pace, error: BaseException | None = None) -> None:
    async with pace.attempt():
        if error is not None:
            raise error


def outcomes(pace: Pace, *errors: BaseException | None) -> Pace:
    """`pace` after one request per error (None: answered), one after the other."""
    async def main() -> None:
        for error in errors:
            try:
                await through(pace, error)
            except (Throttled, TimeoutError):
                pass

    asyncio.run(main())
    return pace


def test_a_429_halves_the_limit_once_per_round_and_answers_raise_it_to_the_ceiling():
    pace = outcomes(Pace(16), Throttled("0"))
    assert pace.current == 8 and pace.throttled == 1 and pace.cuts == 1
    outcomes(pace, TimeoutError())
    assert pace.current == 4 and pace.timeouts == 1
    pace.rate = None  # the 429's pace of requests per second is the next test's
    outcomes(pace, *[None] * 200)
    assert pace.current == 16  # back to the ceiling, never over it
    record = pace.record()
    assert record["lowest"] == 4 and record["last"] == 16 and record["course"][0] == [0.0, 16]


def test_a_429_paces_requests_at_the_rate_the_server_accepted_and_answers_raise_it():
    pace = outcomes(Pace(4), *[None] * 10, Throttled("0"))
    assert pace.rate == pytest.approx(9)  # the 10 answers of the second before it, less a tenth
    outcomes(pace, *[None] * 9)
    assert pace.rate == pytest.approx(10, abs=0.1)  # + 1/rate each


def test_calls_in_flight_when_the_limit_was_cut_do_not_cut_it_again():
    async def main() -> Pace:
        pace = Pace(8)
        release = asyncio.Event()

        async def refused() -> None:
            async with pace.attempt():
                await release.wait()
                raise Throttled("0")

        tasks = [asyncio.ensure_future(refused()) for _ in range(8)]
        await asyncio.sleep(0)
        release.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        return pace

    pace = asyncio.run(main())
    assert pace.throttled == 8 and pace.cuts == 1 and pace.current == 4


def test_retry_after_pauses_the_whole_endpoint():
    async def main() -> list[str]:
        pace, order = Pace(4), []

        async def first() -> None:
            try:
                await through(pace, Throttled("0.2"))
            except Throttled:
                order.append("refused")

        async def second() -> None:
            await asyncio.sleep(0.01)  # after the 429: it must wait for the pause
            async with pace.attempt():
                order.append("sent")

        async def watcher() -> None:
            await asyncio.sleep(0.1)
            order.append("still paused")

        await asyncio.gather(first(), second(), watcher())
        return order

    assert asyncio.run(main()) == ["refused", "still paused", "sent"]


ITEMS = 2 * len(ROWS)


def test_a_rate_limited_server_gets_fewer_calls_and_no_unit_fails(tmp_path):
    """At --concurrency 16 against a server letting 20 requests a second through (a bucket of one
    second) and answering 429 with Retry-After above it: every item completes, at most a quarter as
    many requests are refused as answered (a fixed bound in flight, retried after each wait, was
    refused more often than answered: 174 to 135 in benchmarks/bench_rate_limit.py), and run.json
    records the endpoint's pace."""
    write(tmp_path / "cola.yaml", COLA.replace("attempts: 2", "attempts: 3"))
    dataset(tmp_path, ROWS + [(f"{text} Again.", target, label) for text, target, label in ROWS])
    with FaultServer("ok", rate=20, retry_after="0.2") as server:
        ran = moot(tmp_path / "cola.yaml", "--dataset", tmp_path / "data.yaml", "--out", tmp_path / "run", "--quiet",
                   "--concurrency", 16, *remote(server.url))
        answered, refused = len(server.requests), server.refused
    assert ran.code == 0, ran.err
    assert_clean(ran, max_err_lines=0)
    rows = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    assert len(rows) == ITEMS
    assert refused and refused * 4 <= answered
    (pacing,) = json.loads((tmp_path / "run" / "run.json").read_text())["pacing"].values()
    assert pacing["ceiling"] == 16 and pacing["throttled"] == refused and pacing["lowest"] < 16
    assert server.url.split("//")[1] in next(iter(json.loads((tmp_path / "run" / "run.json").read_text())["pacing"]))


@pytest.mark.parametrize("ceiling", [1, 3])
def test_the_limit_stays_within_concurrency(ceiling):
    assert outcomes(Pace(ceiling), *[None] * 20).current == ceiling
