#!/usr/bin/env python3
"""Is every item protocol measurable on the embedded model? Issue 21's figures, per protocol.

Runs each protocol on its bundled demo dataset (and COLA, optionally debate, on the shared VAST
sample with --vast) on the embedded model, one `moot run` per protocol and dataset in this
process (the model is loaded once), in fresh run folders, then reads the transcripts and prints:

- echo: free-text turns holding a run of 7 words of one of the protocol's prompt templates (its
  literal text between placeholders; target <= 5 %);
- unparsed: items whose answer is unparsed, and among them those the protocol's own rule left
  without a label though every closed answer was read (a debate's tied vote under `tie:
  unparsed`, the negotiation's two conflicting negotiations without a third model), and (debate)
  agents' answers unparsed (target 0 %);
- the predicted labels against the gold labels (with calibration, the run's own: no label above
  70 % when no gold label is above 50 %);
- macro-F1 with calibration (the run's predictions), without it (the same transcripts, each
  answer re-decided from its recorded raw probabilities, no model call: for debate and S2MAD the
  later turns still saw the calibrated answers; the negotiation, whose decisions steer which
  answers are asked next, runs a second time with `calibration: none`), and the majority-class
  baseline;
- seconds per item (mean and median of the units' wall time; COLA <= 20 s, debate <= 30 s), and
  the longest gap between two recorded calls, which is how long the status line can stand still
  (target <= 5 s).

ChatEval runs on the demo preference set (its labels a, b, tie; scores are read as expected
values, not calibrated, so it has no raw column). The machine is shared (2 cores): the load
average (1 minute) is printed before and after each run, and in the table.

Throughput mode (`--server SLOTS[ FLAG ...]`, repeatable; issue 28): COLA, debate and S2MAD on
their demo sets through the embedded model in process (one request at a time) and through each
llama-server design (`moot llama-server --build` once; SLOTS parallel slots, moot sending SLOTS
calls at once, the server's own FLAGs after them), interleaved: every design runs each protocol in
turn, their order reversed every other round (`--repeat`), so the machine's load falls on all of
them alike. Per protocol and design it prints items per minute, the ratio to in-process, the
items whose label equals in-process's in the same round, CPU seconds per item (this process and
its children: the model's process or the server; unlike wall time it hardly depends on what else
the machine runs), prompt tokens the calls reported and (a server) those it evaluated, not reused
from its cache, and generated tokens. Labels vary with the sampling seed (debate samples at
temperature 1.0, S2MAD at 0.2; COLA is greedy), so a server's agreement with in-process says
little alone: the design `in-process seed+1` (the scenario's generation seed plus one, in process)
runs beside them, and its agreement is the model's with itself at another seed, the floor a
server's agreement is read against.

    python benchmarks/bench_items.py                                  # every protocol, demo sets
    python benchmarks/bench_items.py --protocols cola --limit 20 --vast datasets/vast_test_zeroshot.yaml
    python benchmarks/bench_items.py --limit cola=20,debate=12                      # the rest: every item
    python benchmarks/bench_items.py --limit cola=8,debate=4,s2mad=4 --server 4 --server='4 -t 1 -tb 1' --repeat 2
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from string import Template
from typing import Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from moot.cli.run import run as moot_run  # noqa: E402
from moot.engine.folder import read_results  # noqa: E402
from moot.log.events import Call, Message, Outcome, RunFinished  # noqa: E402
from moot.log.transcript import Transcript, load  # noqa: E402
from moot.metrics.classification import UNPARSED, summarize  # noqa: E402
from moot.models.calibration import best  # noqa: E402
from moot.protocols.cola.item import answer_labels  # noqa: E402
from moot.protocols.debate.vote import vote  # noqa: E402
from moot.scenario.bundled import find_dataset, find_scenario  # noqa: E402
from moot.scenario.load import load_scenario  # noqa: E402

RERUN_RAW = ("negotiation",)  # raw decisions not re-computable from the answers: a second run, uncalibrated
DEMOS = {"cola": "demo-stance", "debate": "demo-stance", "s2mad": "demo-rumour-veracity",
         "negotiation": "demo-sentiment", "chateval": "demo-preference"}
WORD = re.compile(r"[a-z0-9]+(?:['\u2019-][a-z0-9]+)*")
RUN = 7  # words in a row that make an echo


# ------------------------------------------------------------------ echo
def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def template_runs(templates: dict[str, str]) -> set[tuple[str, ...]]:
    """Every RUN words in a row of a template's literal text (between its placeholders)."""
    runs: set[tuple[str, ...]] = set()
    for template in templates.values():
        for literal in re.split(Template.pattern, template):
            w = words(literal or "")
            runs |= {tuple(w[i:i + RUN]) for i in range(len(w) - RUN + 1)}
    return runs


def echoes(text: str, runs: set) -> bool:
    w = words(text)
    return any(tuple(w[i:i + RUN]) in runs for i in range(len(w) - RUN + 1))


def free_turns(t: Transcript) -> list[Message]:
    """The free-text turns: messages no closed answer was read from (not a choice's, a
    structured reply's or a calibration's)."""
    kinds = {}
    pending: list[Call] = []
    for event in t.events:
        if isinstance(event, Call):
            pending.append(event)
        elif isinstance(event, Message):
            kinds[event.turn] = {c.kind for c in pending} | {"structured" if c.output else "" for c in pending}
            pending = []
    return [m for m in t.messages if m.measured is None and kinds.get(m.turn, set()) & {"continue", "chat"}
            and "structured" not in kinds[m.turn]]


# ------------------------------------------------------------------ raw (uncalibrated) decisions
def raw_label(m: Message, words_to_label: dict[str, str]) -> str:
    return words_to_label.get(best(m.measured.probabilities), UNPARSED) if m.measured and m.measured.probabilities \
        else UNPARSED


def raw_prediction(protocol: str, scenario, t: Transcript) -> Optional[str]:
    """The item's prediction had every answer been read from its raw probabilities (None: this
    protocol's decision is not re-computable from its answers alone)."""
    if protocol == "cola":
        labels = answer_labels(scenario)
        by_word = {w: lab for lab, w in labels.option_words.items()}
        judged = [m for m in t.messages if m.role == "judger" and m.measured is not None]
        return raw_label(judged[-1], by_word) if judged else None
    identity = {lab: lab for lab in scenario.labels}
    if protocol == "debate":
        answers = [m for m in t.messages if m.action.endswith("_answer") and m.measured is not None]
        rounds = sorted({m.round for m in answers})
        return vote([[raw_label(m, identity) for m in answers if m.round == r] for r in rounds], scenario.tie)[0] \
            if answers else None
    if protocol == "s2mad":
        last = {}
        for m in t.messages:
            if m.action.endswith("_answer") and m.measured is not None:
                last[m.role] = raw_label(m, identity)
        if "judge" in last:
            return last["judge"]
        if "agent" in last:
            return last["agent"]
        p, n = last.get("debater_p"), last.get("debater_n")
        return p if p == n else UNPARSED
    return None


def undecided(t: Transcript) -> bool:
    """The item is unparsed by the protocol's rule, not for an unreadable answer: every closed
    answer it recorded was read."""
    answers = [m for m in t.messages if m.measured is not None]
    return bool(answers) and all(m.decision != UNPARSED for m in answers) and \
        any(o.prediction == UNPARSED for o in t.of_type(Outcome))


# ------------------------------------------------------------------ one run
def run_one(protocol: str, dataset: str, out: Path, limit: Optional[int], scenario: Optional[Path] = None,
            options: Sequence[str] = ()) -> float:
    if out.exists():
        shutil.rmtree(out)
    argv = [str(scenario or protocol), "--dataset", dataset, "--out", str(out), "--quiet", *options] + \
        (["--limit", str(limit)] if limit else [])
    started = time.monotonic()
    code = moot_run(argv)
    if code not in (0, 4):
        raise SystemExit(f"moot run {' '.join(argv)} exited {code}")
    return time.monotonic() - started


def uncalibrated(protocol: str, folder: Path) -> Path:
    """The protocol's bundled scenario with `calibration: none`, written in `folder`."""
    text = find_scenario(protocol).read_text(encoding="utf-8")
    path = folder / f"{protocol}-uncalibrated.yaml"
    path.write_text(re.sub(r"(?m)^calibration: .*$", "calibration: none", text), encoding="utf-8")
    return path


def rerun_f1(protocol: str, dataset: str, base: Path, limit: Optional[int]) -> float:
    """Macro-F1 of the same items run again with calibration off."""
    out = base / f"{protocol}-{Path(dataset).stem}-uncalibrated"
    run_one(protocol, dataset, out, limit, uncalibrated(protocol, base))
    rows = list(read_results(out).values())
    labels = list(load_scenario(find_scenario(protocol)).labels)
    raw = [r["prediction"] for r in rows]
    print(f"  uncalibrated run: predicted {', '.join(f'{k} {v / len(rows):.0%}' for k, v in Counter(raw).items())}")
    return summarize([r["gold"] for r in rows], raw, labels, metric="macro_f1").macro_f1


def stamp(ts: str) -> float:
    return datetime.fromisoformat(ts).timestamp()


def report(protocol: str, dataset: str, out: Path, wall: float) -> dict:
    scenario = load_scenario(find_scenario(protocol))
    runs = template_runs(scenario.templates())
    rows = list(read_results(out).values())
    transcripts = [load(out / r["transcript"]) for r in rows]
    gold = [r["gold"] for r in rows]
    predicted = [r["prediction"] for r in rows]
    raw = [raw_prediction(protocol, scenario, t) for t in transcripts]
    labels = list(scenario.labels)
    turns = [(m, t) for t in transcripts for m in free_turns(t)]
    echoed = [m for m, _ in turns if echoes(m.content, runs)]
    agent_answers = [m for t in transcripts for m in t.messages if m.action.endswith("_answer")]
    walls = [e.wall_s for t in transcripts for e in t.of_type(RunFinished)]
    gaps = []
    for t in transcripts:
        times = [stamp(e.ts) for e in t.events if isinstance(e, (Call,)) or e.type == "run_started"]
        gaps += [b - a for a, b in zip(times, times[1:])]
    majority = Counter(gold).most_common(1)[0][0]
    f1 = summarize(gold, predicted, labels, metric="macro_f1").macro_f1
    f1_raw = summarize(gold, raw, labels, metric="macro_f1").macro_f1 if all(r is not None for r in raw) else None
    f1_major = summarize(gold, [majority] * len(gold), labels, metric="macro_f1").macro_f1
    n = len(rows)

    def share(values: Sequence[str]) -> str:
        counts = Counter(values)
        return ", ".join(f"{lab} {counts.get(lab, 0) / n:.0%}" for lab in [*labels, UNPARSED] if counts.get(lab))

    print(f"== {protocol} on {dataset}: {n} items ({out})")
    print(f"  echo (a {RUN}-word run of a template) : {len(echoed)}/{len(turns)} turns "
          f"({len(echoed) / max(len(turns), 1):.1%})  target <= 5%")
    for m in echoed[:5]:
        print(f"    {m.speaker} ({m.action}): {m.content[:140]!r}")
    unparsed_answers = sum(1 for m in agent_answers if m.decision == UNPARSED)
    ruled = sum(1 for t in transcripts if undecided(t))
    print(f"  unparsed: {predicted.count(UNPARSED)}/{n} items"
          + (f" ({ruled} of them by the protocol's rule, every answer read: a tie, a conflict)" if ruled else "")
          + (f", {unparsed_answers}/{len(agent_answers)} answers" if agent_answers else "") + "  target 0%")
    recomputed = f"   (raw: {share([r or UNPARSED for r in raw])})" if all(r is not None for r in raw) else ""
    print(f"  predicted: {share(predicted)}{recomputed}")
    print(f"  gold:      {share(gold)}")
    top = max(Counter(predicted).values()) / n
    print(f"  largest predicted label: {top:.0%}  target <= 70% (largest gold label {max(Counter(gold).values()) / n:.0%})")
    raw_text = f"{f1_raw:.3f}" if f1_raw is not None else "n/a (not re-computable from the answers alone)"
    print(f"  macro-F1: calibrated {f1:.3f}  raw {raw_text}  majority class ({majority}) {f1_major:.3f}")
    print(f"  seconds per item: mean {statistics.fmean(walls):.1f}, median {statistics.median(walls):.1f} "
          f"(run wall {wall:.0f}s); longest gap between calls {max(gaps):.1f}s, median {statistics.median(gaps):.1f}s")
    return dict(protocol=protocol, dataset=dataset, n=n, echo=len(echoed) / max(len(turns), 1),
                unparsed=predicted.count(UNPARSED) / n, ruled=ruled, top=top, spread=share(predicted), f1=f1,
                f1_raw=f1_raw, f1_major=f1_major,
                mean_s=statistics.fmean(walls), median_s=statistics.median(walls), gap=max(gaps))


# ------------------------------------------------------------------ throughput: in process against llama-server's slots
THROUGHPUT = ("cola", "debate", "s2mad")
IN_PROCESS = "in-process"
OTHER_SEED = "in-process seed+1"  # the floor of label agreement: the model against itself at another seed
METRICS = ("prompt_tokens_total", "tokens_predicted_total", "prompt_seconds_total", "tokens_predicted_seconds_total")


@dataclass(frozen=True)
class Design:
    """A way to serve the embedded model: moot's options, the scenario as it must be declared,
    and (a server) where its counters are read."""

    name: str
    options: tuple[str, ...] = ()
    base_url: Optional[str] = None
    seed_shift: int = 0

    def scenario(self, protocol: str, folder: Path) -> Optional[Path]:
        """The bundled scenario (None) in process at its own seed; else a copy: its generation seed
        shifted by `seed_shift`, and through a server declaring it a base model on llama-server (so
        turns carry the embedded model's generation controls)."""
        if self.base_url is None and not self.seed_shift:
            return None
        text = find_scenario(protocol).read_text(encoding="utf-8")
        if self.seed_shift:
            text = shifted_seed(protocol, text, self.seed_shift)
        if self.base_url is not None:
            text += "\nbackends: {openai: {kind: base, server: llama-server}}\n"
        copy = folder / f"{protocol}-{self.name.replace(' ', '')}.yaml"
        copy.write_text(text, encoding="utf-8")
        return copy

    def counters(self) -> dict[str, float]:
        """llama-server's own counters (--metrics): prompt tokens it evaluated (the cached ones
        are not counted), tokens generated, and the seconds spent on each."""
        if self.base_url is None:
            return {}
        url = self.base_url.removesuffix("/v1") + "/metrics"
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url, timeout=10) as answer:
            text = answer.read().decode()
        return {name: float(value) for line in text.splitlines() if line.startswith("llamacpp:")
                for name, value in [line.removeprefix("llamacpp:").split(" ", 1)] if name in METRICS}


def server_design(spec: str, folder: Path, stack: ExitStack) -> Design:
    """`SLOTS[ FLAG ...]`: llama-server with SLOTS parallel slots (and llama-server's FLAGs),
    serving the embedded model as moot loads it, asked with SLOTS calls in flight."""
    from moot.models.backends.local.llama_server import embedded_server

    slots, *flags = spec.split()
    server = embedded_server(log=folder / f"llama-server-{len(list(folder.glob('llama-server-*')))}.log",
                             parallel=int(slots), metrics=True, extra=flags)
    url = stack.enter_context(server).url
    return Design(f"server -np {spec}", ("--model", "openai:gemma", "--base-url", url, "--concurrency", slots), url)


def shifted_seed(protocol: str, text: str, shift: int) -> str:
    """The scenario `text` with its `generation:` line's seed shifted by `shift`."""
    line = re.compile(r"(?m)^(generation:.*\bseed: )(\d+)")
    if not line.search(text):
        raise SystemExit(f"the {protocol} scenario has no `generation: {{... seed: N}}` line to shift")
    return line.sub(lambda m: f"{m[1]}{int(m[2]) + shift}", text, count=1)


def cpu_seconds() -> float:
    """CPU seconds used so far by this process and its children, ended or alive (the embedded
    model's process, llama-servers): what a design costs whatever else the machine runs."""
    tick, own, mine = os.sysconf("SC_CLK_TCK"), os.times(), str(os.getpid())
    total = own.user + own.system + own.children_user + own.children_system
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == mine:  # its parent
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def tokens_of(out: Path) -> tuple[int, int]:
    """Prompt and generated tokens the run's calls reported (closed answers report their prompt)."""
    calls = [e for r in read_results(out).values() for e in load(out / r["transcript"]).of_type(Call)]
    return sum(c.usage.prompt_tokens for c in calls), sum(c.usage.completion_tokens for c in calls)


def throughput(designs: Sequence[Design], protocols: Sequence[str], limits_: dict[str, int], repeat: int,
               base: Path) -> None:
    """Every protocol on its demo set through every design, interleaved (the order of the designs
    reversed every other round, so a change in the machine's load falls on all of them), then
    items per minute per design, the ratio to in-process, and per-item label agreement."""
    rows: dict[tuple[str, str], list[dict]] = {}
    for design in {d.options: d for d in designs}.values():  # warm: the model loaded, the server's first decode done
        run_one("cola", str(find_dataset(DEMOS["cola"])), base / "warm", 1, design.scenario("cola", base),
                design.options)
    for round_ in range(repeat):
        for protocol in protocols:
            dataset, limit = str(find_dataset(DEMOS[protocol])), limits_.get(protocol, limits_.get(""))
            for design in designs if round_ % 2 == 0 else designs[::-1]:
                out = base / f"{protocol}-{design.name.replace(' ', '')}-{round_}"
                before, load_before, cpu = design.counters(), os.getloadavg()[0], cpu_seconds()
                wall = run_one(protocol, dataset, out, limit, design.scenario(protocol, base), design.options)
                after, cpu = design.counters(), cpu_seconds() - cpu
                predicted = {i: r["prediction"] for i, r in read_results(out).items()}
                rows.setdefault((protocol, design.name), []).append(dict(
                    wall=wall, cpu=cpu, predicted=predicted, tokens=tokens_of(out), load=(load_before, os.getloadavg()[0]),
                    server={k: after[k] - before.get(k, 0.0) for k in after}))
                print(f"  {protocol} round {round_} {design.name}: {len(predicted)} items in {wall:.0f}s "
                      f"({len(predicted) / wall * 60:.1f}/min, {cpu / len(predicted):.1f} CPU s/item), load {load_before:.1f}-{os.getloadavg()[0]:.1f}")
    print("\n| protocol | design | items | items/min | × in-process | labels as in-process | CPU s/item | "
          "prompt tok (evaluated) | generated tok | load |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for protocol in protocols:
        reference = rows[(protocol, IN_PROCESS)] if (protocol, IN_PROCESS) in rows else None
        for design in designs:
            runs = rows[(protocol, design.name)]
            items = sum(len(r["predicted"]) for r in runs)
            rate = items / sum(r["wall"] for r in runs) * 60
            ratio = ""
            agree = ""
            if reference is not None:
                ratio = f"{rate / (sum(len(r['predicted']) for r in reference) / sum(r['wall'] for r in reference) * 60):.2f}"
                same = sum(r["predicted"].get(i) == p for r, ref in zip(runs, reference) for i, p in ref["predicted"].items())
                agree = f"{same}/{items}"
            prompt, generated = (sum(r["tokens"][k] for r in runs) for k in (0, 1))
            evaluated = sum(r["server"].get("prompt_tokens_total", 0) for r in runs)
            served = f" ({evaluated:.0f})" if design.base_url else ""
            loads = [x for r in runs for x in r["load"]]
            cpu = sum(r["cpu"] for r in runs) / items
            print(f"| {protocol} | {design.name} | {items} | {rate:.1f} | {ratio} | {agree} | {cpu:.1f} | {prompt}{served} | "
                  f"{generated} | {min(loads):.1f}-{max(loads):.1f} |")


def limits(text: str) -> dict[str, int]:
    """`--limit`: N for every protocol ("" key), or protocol=N pairs."""
    if "=" not in text:
        return {"": int(text)}
    return {name.strip(): int(n) for name, n in (pair.split("=", 1) for pair in text.split(","))}


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--protocols", default=",".join(DEMOS), help="on their demo sets (\"\": none, only --vast)")
    p.add_argument("--limit", type=limits, default={},
                   help="the first N items of each dataset (N), or per protocol (cola=20,debate=10)")
    p.add_argument("--vast", type=Path, help="a VAST dataset spec (its file in data/): COLA and debate run on it too")
    p.add_argument("--vast-protocols", default="cola", help="which protocols run on VAST (default cola)")
    p.add_argument("--out", type=Path, help="folder for the run folders (default: a temporary one)")
    p.add_argument("--server", action="append", default=[], metavar="SLOTS[ FLAG ...]",
                   help="throughput mode: also through llama-server with SLOTS slots (and its FLAGs, e.g. "
                        "--server='4 --swa-full'), SLOTS calls in flight; repeatable")
    p.add_argument("--no-in-process", action="store_true", help="throughput mode: llama-server designs only")
    p.add_argument("--repeat", type=int, default=1, help="throughput mode: rounds of every design")
    args = p.parse_args(argv)
    base = args.out or Path(tempfile.mkdtemp(prefix="bench_items-"))
    base.mkdir(parents=True, exist_ok=True)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.server:
        protocols = [name for name in args.protocols.split(",") if name in THROUGHPUT] \
            if args.protocols != ",".join(DEMOS) else list(THROUGHPUT)
        with ExitStack() as stack:
            designs = ([] if args.no_in_process else [Design(IN_PROCESS), Design(OTHER_SEED, seed_shift=1)]) + \
                [server_design(spec, base, stack) for spec in args.server]
            throughput(designs, protocols, args.limit, args.repeat, base)
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return 0
    plan = [(name, str(find_dataset(DEMOS[name]))) for name in args.protocols.split(",") if name]
    if args.vast:
        plan += [(name, str(args.vast.resolve())) for name in args.vast_protocols.split(",")]
    found = []
    for protocol, dataset in plan:
        out = base / f"{protocol}-{Path(dataset).stem}"
        before = os.getloadavg()[0]
        limit = args.limit.get(protocol, args.limit.get(""))
        wall = run_one(protocol, dataset, out, limit)
        figures = report(protocol, Path(dataset).stem, out, wall)
        if figures["f1_raw"] is None and protocol in RERUN_RAW:
            figures["f1_raw"] = rerun_f1(protocol, dataset, base, limit)
            print(f"  macro-F1 uncalibrated (a second run, calibration: none): {figures['f1_raw']:.3f}")
        found.append({**figures, "load": (before, os.getloadavg()[0])})
        print(f"  load average {before:.2f} before, {found[-1]['load'][1]:.2f} after")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("\n| protocol | dataset | items | echo | unparsed (by rule) | predicted | top label | macro-F1 cal | raw | majority | s/item mean | median | longest gap | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for f in found:
        raw = f"{f['f1_raw']:.3f}" if f["f1_raw"] is not None else "n/a"
        print(f"| {f['protocol']} | {f['dataset']} | {f['n']} | {f['echo']:.1%} | {f['unparsed']:.0%} ({f['ruled']}) | "
              f"{f['spread']} | {f['top']:.0%} | "
              f"{f['f1']:.3f} | {raw} | {f['f1_major']:.3f} | {f['mean_s']:.1f} | {f['median_s']:.1f} | {f['gap']:.1f}s | "
              f"{f['load'][0]:.1f}-{f['load'][1]:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
