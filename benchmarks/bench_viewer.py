#!/usr/bin/env python3
"""`moot view`'s figures (issue 17) over runs the scripted model makes here:

- the runs list of RUNS run folders (distinct scripted runs, copied to RUNS folders): server time,
  first request and warm (median of 5);
- the first page of a UNITS-unit run (a scripted cola_direct batch), first and warm, and its
  headline interval (computed in the background) until it shows;
- a unit page of a conference of ~120 messages, first and warm;
- live latency: a conference's transcript grown turn by turn while a client holds its page's event
  stream: seconds from the append to the update event (median and max of 12 turns);
- the server's resident memory (current and peak) after all of the above;
- Ctrl-C with a live stream open: the exit code and the seconds it took;
- `--bundle` of the distinct runs: seconds, pages, bytes.

Targets: runs list <= 0.5 s, first page <= 1 s, unit page <= 0.3 s, live <= 1 s, RSS <= 200 MB,
stop < 1 s with exit 0.

    python benchmarks/bench_viewer.py --runs 200 --units 10000
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import urlopen

from loopback import write_dataset

CONFERENCE = """\
title: A long scripted conference
task: Agree on each topic, or debate it to the round cap.
topics: [first question, second question, third question, fourth question]
moderator: {name: Moderator}
participants:
  - {name: Ann}
  - {name: Bob}
  - {name: Cem}
  - {name: Dee}
judge: {name: Judge}
models: {default: "scripted:%s"}
limits: {max_rounds_per_topic: 5}
""" % ",".join(["MORE_DEBATE"] * 20)


def moot(*argv: object, expect: tuple[int, ...] = (0,)) -> None:
    code = subprocess.run([sys.executable, "-m", "moot", *map(str, argv)], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode
    assert code in expect, f"moot {' '.join(map(str, argv))} exited {code}"


def make_runs(top: Path, runs: int, units: int) -> tuple[Path, Path]:
    """(the folder of distinct runs, the folder of everything)."""
    distinct, data = top / "distinct", top / "data"
    (top / "conference.yaml").write_text(CONFERENCE, encoding="utf-8")
    moot("run", top / "conference.yaml", "--out", distinct / "conference", "--quiet")
    small = write_dataset(data / "small", 8)
    for n in range(8):
        scenario = ("cola_direct", "cola", "debate", "cola_cot")[n % 4]
        moot("run", scenario, "--dataset", small, "--model", "scripted", "--limit", 4 + n % 5, "--out",
             distinct / f"{scenario}-{n}", "--quiet", expect=(0, 4))
    everything = top / "all"
    for n in range(runs):
        source = sorted(distinct.iterdir())[n % 9]
        shutil.copytree(source, everything / f"copies/{n:03d}-{source.name}")
    moot("run", "cola_direct", "--dataset", write_dataset(data / "large", units), "--model", "scripted",
         "--concurrency", 32, "--out", everything / "large", "--quiet")
    shutil.copytree(distinct / "conference", everything / "conference")
    return distinct, everything


class Server:
    def __init__(self, folder: Path):
        self.process = subprocess.Popen([sys.executable, "-m", "moot", "view", str(folder)], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        found = re.search(r"(http://\S+)/", self.process.stdout.readline())
        assert found, self.process.stderr.read() if self.process.stderr else ""
        self.base = found.group(1)

    def get(self, path: str) -> tuple[float, str]:
        started = time.perf_counter()
        with urlopen(self.base + path, timeout=120) as response:
            body = response.read().decode("utf-8")
        return time.perf_counter() - started, body

    def timed(self, path: str) -> tuple[float, float]:
        """(first request, median of 5 more) seconds."""
        first = self.get(path)[0]
        return first, statistics.median(self.get(path)[0] for _ in range(5))

    def memory(self) -> tuple[float, float]:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        kb = {k: int(v.split()[0]) for k, v in re.findall(r"^(VmRSS|VmHWM):\s+(.*)$", status, re.M)}
        return kb["VmRSS"] / 1024, kb["VmHWM"] / 1024

    def stop(self) -> tuple[int, float]:
        started = time.monotonic()
        self.process.send_signal(signal.SIGINT)
        code = self.process.wait(timeout=30)
        return code, time.monotonic() - started


class Stream:
    """A client of one page's event stream, noting when each update event arrives."""

    def __init__(self, base: str, path: str):
        where = urlsplit(base)
        self.connection = http.client.HTTPConnection(where.hostname, where.port, timeout=60)
        self.connection.request("GET", path)
        self.response = self.connection.getresponse()
        self.updates: list[float] = []
        threading.Thread(target=self.read, daemon=True).start()

    def read(self) -> None:
        try:
            for line in self.response:
                if line.startswith(b"event: regions"):
                    self.updates.append(time.perf_counter())
        except (OSError, ValueError):
            return

    def next_after(self, count: int, timeout: float = 10.0) -> float:
        end = time.monotonic() + timeout
        while len(self.updates) <= count and time.monotonic() < end:
            time.sleep(0.005)
        assert len(self.updates) > count, "no update event"
        return self.updates[count]


def live_latency(server: Server, folder: Path, turns: int = 12) -> list[float]:
    """Grow a copy of the conference's transcript turn by turn (each turn with the events before
    it) while a client holds the unit page's event stream (module docstring)."""
    shutil.copytree(folder / "conference", folder / "live")
    transcript = folder / "live" / "conference.jsonl"
    lines = transcript.read_text(encoding="utf-8").splitlines(keepends=True)
    turns_at = [n for n, line in enumerate(lines) if json.loads(line)["type"] == "message"][-turns:]
    transcript.write_text("".join(lines[:turns_at[0]]), encoding="utf-8")
    (folder / "live" / "results.jsonl").unlink()  # the unit is not finished yet
    stream = Stream(server.base, "/events/unit/live?u=conference")
    stream.next_after(0, 30)  # the page's regions as they are
    latencies = []
    for start, end in zip(turns_at, turns_at[1:] + [len(lines)]):
        time.sleep(0.5)
        seen = len(stream.updates)
        with open(transcript, "a", encoding="utf-8") as f:
            f.write("".join(lines[start:end]))
            f.flush()
            appended = time.perf_counter()
        latencies.append(stream.next_after(seen) - appended)
    return latencies


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--units", type=int, default=10000)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp)
        made = time.monotonic()
        distinct, everything = make_runs(top, args.runs, args.units)
        messages = sum(1 for line in (everything / "conference" / "conference.jsonl").open(encoding="utf-8")
                       if json.loads(line)["type"] == "message")
        print(f"made {args.runs + 2} run folders in {time.monotonic() - made:.0f} s (a {messages}-message conference, "
              f"a {args.units}-unit run); load average {os.getloadavg()[0]:.1f}")
        server = Server(everything)
        try:
            first, warm = server.timed("/")
            print(f"runs list of {args.runs + 2} runs: first {first:.2f} s, warm {warm:.3f} s (target <= 0.5 s)")
            first, warm = server.timed("/run/large")
            print(f"first page of the {args.units}-unit run: first {first:.2f} s, warm {warm:.3f} s (target <= 1 s)")
            started = time.monotonic()
            while "[interval…]" in server.get("/run/large")[1] and time.monotonic() - started < 120:
                time.sleep(0.2)
            print(f"  its headline interval shown {time.monotonic() - started:.1f} s later (computed in the "
                  "background)")
            print(f"  page 50: {server.timed('/run/large?page=50')[1]:.3f} s warm; filter wrong: "
                  f"{server.timed('/run/large?show=wrong')[1]:.3f} s warm")
            first, warm = server.timed("/unit/conference?u=conference")
            print(f"unit page of the {messages}-message conference: first {first:.2f} s, warm {warm:.3f} s "
                  "(target <= 0.3 s)")
            latencies = live_latency(server, everything)
            print(f"live update latency: median {statistics.median(latencies):.2f} s, max {max(latencies):.2f} s "
                  f"over {len(latencies)} appended events (target <= 1 s)")
            rss, peak = server.memory()
            print(f"server memory: {rss:.0f} MB resident, peak {peak:.0f} MB (target <= 200 MB)")
            Stream(server.base, "/events/unit/conference?u=conference").next_after(0, 30)
        finally:
            code, took = server.stop()
        print(f"Ctrl-C with a live stream open: exit {code} in {took:.2f} s (target 0, < 1 s)")
        started = time.monotonic()
        out = top / "bundle"
        moot("view", distinct, "--bundle", out)
        took = time.monotonic() - started
        files = [f for f in out.rglob("*") if f.is_file()]
        size = sum(f.stat().st_size for f in files)
        print(f"bundle of {len(list(distinct.iterdir()))} runs: {took:.1f} s, {len(files)} files, "
              f"{size / 1e6:.1f} MB; load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
