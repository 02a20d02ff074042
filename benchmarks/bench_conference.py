#!/usr/bin/env python3
"""Can a person follow the default conference? Issue 11's targets, read from transcripts.

Runs `scenarios/drug_policy.yaml` on the embedded model for each seed (one conference at a time,
`moot run ... --vary seed=...`), or reads the run folders or transcripts given, and prints per
conference, over its moderator and participant turns:

- echo: a turn repeating >= 8 consecutive words of the scenario's title, task, topics, personas
  or labels, or of a prompt template rendered for this scenario (target <= 10 %);
- impersonation: a turn with a line that starts with another speaker's label, `Label:` (<= 5 %);
- mid-sentence: a turn that does not end a sentence (<= 10 %); beside it, how many turns were
  cut at their last full sentence (what keeps mid-sentence low, recorded on each turn);
- the evaluator's score sets that are constant or strictly monotone across the ten criteria in
  their listed order (target: none);
- wall time of the conference (<= 300 s on the project's 2-core machine), and the prompt tokens
  the model evaluated per turn against the prompt's length: with the shared transcript document
  only the new tokens are evaluated, so time does not grow with the square of the conversation.

Speed against llama.cpp's own (issue 18): around each conference it runs (one process per seed),
the benchmark measures llama.cpp's prompt rate (a 512-token prompt in one decode) and generation
rate (one token per decode) on the same model and context size, at the start of a context and
after 1,024 tokens (a token attends to all before it), on each thread count the model may choose
(moot.models.backends.local.cores; each call records its own), and prints, per role and in all, the tokens the
model evaluated (prompt tokens not already in its KV cache, as each call records) and generated,
the bound = the sum over calls of llama.cpp's time for them at the call's thread count and at
their positions (interpolated; beside it the bound with every token priced at the start of a
context, as before positions were counted), and the ratio = time / bound (in all: the process's
wall time, start-up and model load included; target <= 1.25, and <= 25 s for seed 42). `--against PYTHON` runs the same seeds, interleaved, with
another interpreter whose moot is an earlier version (A/B), and prints both sides' medians.
`--extra-buffers` runs the seeds, interleaved, with llama.cpp's extra buffer types forced on and
forced off (`backends.local.extra_buffers`; issue 27: the speed both ways, where both work) and
prints each side's figures and the second's wall time against the first's.
`--server` runs the same seeds, interleaved, through llama.cpp's llama-server (`moot llama-server
--build`) serving the embedded model, declared `kind: base` (issue 28: the same quality figures as
in-process and <= 1.3x its wall time), prints each side's figures, and ends with the line
`server: llama-server wall/in-process R` (the medians' ratio).

With --controls it also scores three fixed debates with the scenario's evaluator (`moot score
--role evaluator=...`): an excerpt of a good debate, a recitation of the personas, and a rude,
incoherent one. An evaluator worth reading ranks them good > recitation, rude; the embedded 270M
model does not (issue 11 FINDINGS §5), which this keeps visible.

    python benchmarks/bench_conference.py --seeds 1,2 --controls
    python benchmarks/bench_conference.py --seeds 42,1,2 --against ../main/.venv/bin/python
    python benchmarks/bench_conference.py --seeds 42,1 --server
    python benchmarks/bench_conference.py --seeds 42,1,2 --extra-buffers
    python benchmarks/bench_conference.py transcripts/drug_policy      # read runs already made
"""

from __future__ import annotations

import argparse
import contextlib
import json
from collections import Counter
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from moot.agents.conference.document import SPOKEN, TranscriptDocument  # noqa: E402
from moot.agents.prompts import render  # noqa: E402
from moot.log.events import Call, Message  # noqa: E402
from moot.protocols.conference.events import Score  # noqa: E402
from moot.models.continuation import ends_sentence  # noqa: E402
from moot.protocols.conference.setup import setup_of  # noqa: E402
from moot.protocols.conference.schema import Scenario  # noqa: E402
from moot.scenario.load import load_scenario  # noqa: E402
from moot.log.transcript import Transcript, load  # noqa: E402
from moot.engine.folder import RunFolderError  # noqa: E402
from moot.saved.source import open_run  # noqa: E402
from moot.protocols.conference.turns import suspect_of  # noqa: E402
from moot.protocols.conference.verdicts import CRITERIA  # noqa: E402

SCENARIO = ROOT / "scenarios" / "drug_policy.yaml"
ROLES = ("moderator", "participant")
WORD = re.compile(r"[a-z0-9]+(?:['\u2019-][a-z0-9]+)*")
GENERIC = ("moderator", "judge", "evaluator", "assessor", "user", "speaker", "participant")
LABEL_LINE = re.compile(r"^[\s*_\"'>-]*([A-Za-z][\w.'\- ]{0,40}?)\s*(?:\([^)\n]{0,80}\))?\s*[*_]*\s*:")


# ------------------------------------------------------------------ the transcript's turns
def said(m: Message) -> str:
    """What a turn said (a deciding moderator's message, not its JSON)."""
    if m.action == "decide":
        try:
            return str(json.loads(m.content).get("message", ""))
        except ValueError:
            return m.content
    return m.content


def turns(t: Transcript) -> list[Message]:
    """The moderator's and participants' free-text turns."""
    return [m for m in t.messages if m.role in ROLES and m.action in SPOKEN]


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def ngrams(text: str, n: int = 8) -> set[tuple[str, ...]]:
    w = words(text)
    return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}


def echo_sources(s: Scenario) -> set[tuple[str, ...]]:
    """8-grams of what a turn must not recite: the scenario's texts and every prompt template,
    rendered for each agent and topic (the document's header and directions included)."""
    texts = [s.title, s.task, *s.topics, *(a.persona for _, a in s.agents()), *s.speaker_labels().values()]
    setup, labels = setup_of(s), s.speaker_labels()
    document = TranscriptDocument(setup)
    texts.append(document.header())
    for topic in range(len(s.topics)):
        for key, template in s.templates().items():
            for _, agent in s.agents():
                fields = {**document.fields(topic, 1), "name": labels[agent.name], "persona": agent.persona,
                          "topics": "\n".join(s.topics), "criterion": "", "criterion_text": "", "count": ""}
                texts.append(render(template, fields))
    grams: set[tuple[str, ...]] = set()
    for text in texts:
        grams |= ngrams(text)
    return grams


def impersonates(text: str, own: Sequence[str], others: Iterable[str]) -> bool:
    """A line of `text` opens with another speaker's label (`Prof. Okafor:`, `Participant_2 (...):`)."""
    mine = {o.lower() for o in own}
    theirs = {o.lower() for o in others} | set(GENERIC)
    for line in text.splitlines():
        found = LABEL_LINE.match(line)
        if found:
            name = found.group(1).strip().lower()
            base = re.sub(r"[\s_]*\d+$", "", name)
            if name not in mine and (name in theirs or base in theirs):
                return True
    return False


def calls_per_turn(t: Transcript) -> list[tuple[Message, list[Call]]]:
    """Each turn with the calls recorded with it (they precede its message in the same write)."""
    found, pending = [], []
    for event in t.events:
        if isinstance(event, Call):
            pending.append(event)
        elif isinstance(event, Message):
            found.append((event, pending))
            pending = []
    return found


# ------------------------------------------------------------------ figures
def pct(count: int, total: int) -> str:
    return f"{count}/{total} ({count / total:.0%})" if total else "0/0"


def figures(t: Transcript, grams: set, labels: dict[str, str]) -> dict:
    spoken = turns(t)
    text = {id(m): said(m) for m in spoken}  # each turn read once
    names = {name: {name, label} for name, label in labels.items()}
    everyone = {x for both in names.values() for x in both}
    echo = [m for m in spoken if ngrams(text[id(m)]) & grams]
    imitate = [m for m in spoken if impersonates(text[id(m)], list(names.get(m.speaker, {m.speaker})),
                                                 everyone - names.get(m.speaker, set()))]
    unfinished = [m for m in spoken if not ends_sentence(text[id(m)])]
    scores = [s for s in t.of_type(Score) if s.kind == "debate" and s.parsed]
    flat = [s for s in scores if suspect_of([s.scores[c] for c in CRITERIA])]
    measured = [(m, sum(c.detail.evaluated for c in calls), sum(c.usage.prompt_tokens for c in calls),
                 sum(c.latency_s for c in calls))
                for m, calls in calls_per_turn(t)
                if calls and all(c.detail is not None and c.detail.evaluated is not None for c in calls)]
    return dict(turns=spoken, text=text, echo=echo, imitate=imitate, unfinished=unfinished,
                cut=[m for m in spoken if m.cut], scores=scores, flat=flat, measured=measured, wall=t.finished.wall_s if t.finished else None)


def report(name: str, t: Transcript, grams: set, labels: dict[str, str]) -> dict:
    f = figures(t, grams, labels)
    n = len(f["turns"])
    print(f"== {name}: {t.path}")
    print(f"  moderator and participant turns: {n}")
    print(f"  instruction echo (>= 8 words of the scenario or a template): {pct(len(f['echo']), n)}  target <= 10%")
    print(f"  impersonation (a line opening with another speaker's label):  {pct(len(f['imitate']), n)}  target <= 5%")
    print(f"  ending mid-sentence:                                            {pct(len(f['unfinished']), n)}  "
          f"target <= 10%  (cut at their last full sentence: {len(f['cut'])})")
    for m in f["echo"] + f["imitate"] + f["unfinished"]:
        print(f"    turn {m.turn} {m.speaker}: {f['text'][id(m)][:160]!r}")
    sets = [" ".join(f"{s.scores[c]:.1f}" for c in CRITERIA) for s in f["scores"]]
    print(f"  evaluator score sets constant or monotone: {len(f['flat'])} of {len(f['scores'])}  target 0")
    for s, text in zip(f["scores"], sets):
        print(f"    topic {s.topic + 1} ({s.method or 'written'}): {text}")
    wall = f["wall"]
    print(f"  wall time: {wall:.1f}s  target <= 300s" if wall is not None else "  wall time: (run did not finish)")
    if f["measured"]:
        evaluated = sum(e for _, e, _, _ in f["measured"])
        prompt = sum(p for _, _, p, _ in f["measured"])
        print(f"  prompt tokens evaluated / in the prompt, per turn (the rest reused from the model's cache): "
              f"{evaluated}/{prompt} in all, {1 - evaluated / prompt:.1%} reused")
        print("    " + ", ".join(f"{m.turn}:{e}/{p}" for m, e, p, _ in f["measured"]))
        spoken = [(p, s) for m, _, p, s in f["measured"] if m.role in ROLES and m.action in SPOKEN]
        if len(spoken) >= 4:
            half = len(spoken) // 2
            early, late = spoken[:half], spoken[half:]
            print(f"    free-text turns, mean prompt {statistics.fmean(p for p, _ in early):.0f} -> "
                  f"{statistics.fmean(p for p, _ in late):.0f} tokens, mean time {statistics.fmean(s for _, s in early):.2f}s"
                  f" -> {statistics.fmean(s for _, s in late):.2f}s (first half -> second half)")
    return f


def excerpt(t: Transcript, f: dict, labels: dict[str, str], count: int = 6) -> None:
    """The first turns of `t`, as read by `figures` (`f`)."""
    print(f"  excerpt ({t.path.name}):")
    for m in f["turns"][:count]:
        print(f"    {labels.get(m.speaker, m.speaker)}: {f['text'][id(m)]}")


# ------------------------------------------------------------------ running
@dataclass(frozen=True)
class Side:
    """How one side of the comparison runs a conference: its interpreter, scenario and options."""

    python: str
    scenario: Path = SCENARIO
    options: tuple[str, ...] = ()


def run_seed(side: Side, seed: int, out: Path, model: Optional[str]) -> float:
    """One conference in its own process (the scenario's own seed: the default command, `python
    run_conference.py SCENARIO`); its wall time. Run outside the tree, so that `python` imports
    its own moot."""
    command = [side.python, "-m", "moot", "run", str(side.scenario), "--out", str(out), "--quiet", "--no-cache",
               *side.options]
    if seed != load_scenario(SCENARIO).generation.seed:
        command += ["--vary", f"seed={seed}"]
    if model and not side.options:
        command += ["--model", model]
    started = time.monotonic()
    subprocess.run(command, check=True, cwd=out.parent, stdout=subprocess.DEVNULL)
    return time.monotonic() - started


def server_side(folder: Path, url: str) -> Side:
    """The same conference through a server at `url`, declared `kind: base` (documents through
    /v1/completions, closed answers from the returned log-probabilities) and `server: llama-server`
    (the embedded model's generation controls: sampling, seeds, grammar, DRY)."""
    scenario = folder / "drug_policy_server.yaml"
    scenario.write_text(SCENARIO.read_text(encoding="utf-8") + "\nbackends: {openai: {kind: base, server: llama-server}}\n",
                        encoding="utf-8")
    return Side(sys.executable, scenario, ("--model", "openai:gemma", "--base-url", url))


def llama_server(folder: Path):
    """llama.cpp's llama-server (`moot llama-server --build`) serving the embedded model as moot loads it."""
    from moot.models.backends.local.llama_server import embedded_server

    return embedded_server(log=folder / "llama_server.log")


def buffers_side(folder: Path, setting: str) -> Side:
    """The conference with llama.cpp's extra buffer types forced `on` or `off`."""
    scenario = folder / f"drug_policy_buffers_{setting}.yaml"
    scenario.write_text(SCENARIO.read_text(encoding="utf-8") + f"\nbackends: {{local: {{extra_buffers: {setting}}}}}\n",
                        encoding="utf-8")
    return Side(sys.executable, scenario)


# ------------------------------------------------------------------ speed: against llama.cpp's own
@dataclass(frozen=True)
class Rates:
    """llama.cpp's own speed on this machine, now, on a thread count, at the start of a context
    and deep in one: seconds per token, prompt and generation (a token attends to every token
    before it, so one at position 1,300 costs 10-25 % more here than one at 300)."""

    prompt: tuple[float, float]  # a prompt's token, at PROMPT_AT[0] and PROMPT_AT[1] on average
    generation: tuple[float, float]  # a generated token, at GENERATED_AT[0] and GENERATED_AT[1]

    def seconds(self, evaluated: int, generated: int, position: int = 0) -> float:
        """Evaluating the last `evaluated` of a prompt of `position` tokens, then generating
        `generated` tokens: each at its tokens' mean position (linear in between and beyond)."""
        return (evaluated * along(PROMPT_AT, self.prompt, max(position - evaluated / 2, 0))
                + generated * along(GENERATED_AT, self.generation, position + generated / 2))

    def rate(self, shallow: bool = True) -> tuple[float, float]:
        """Tokens per second, prompt and generation, at the start of a context (or deep in it)."""
        i = 0 if shallow else 1
        return 1 / self.prompt[i], 1 / self.generation[i]


PROMPT, GENERATED, DEEP = 512, 64, 1024  # measured: a 512-token prompt, then 64 tokens, at 0 and after 1,024
PROMPT_AT = (PROMPT / 2, DEEP + PROMPT / 2)
GENERATED_AT = (PROMPT + GENERATED / 2, DEEP + PROMPT + GENERATED / 2)


def along(at: tuple[float, float], cost: tuple[float, float], position: float) -> float:
    return max(cost[0] + (cost[1] - cost[0]) * (position - at[0]) / (at[1] - at[0]), 0.0)


def thread_counts() -> list[int]:
    """The thread counts rates are measured on (moot.models.backends.local.cores chooses among them per call)."""
    from moot.models.backends.local.cores import usable_cores

    cores = usable_cores()
    return sorted({1, max(cores // 2, 1), cores})


def llama_rates() -> dict[int, Rates]:
    """Measured on the embedded model as the scenario loads it (context size), per thread count."""
    from moot.models.backends.local.extra_buffers import choose
    from moot.models.backends.local.client import default_model_path
    from moot.models.backends.local.load import load_llama
    from moot.models.backends.local.provider import LocalBackend

    block = LocalBackend()
    path = default_model_path()
    llm = load_llama(path, block.n_ctx, block.n_threads, extra_buffers=choose(block.extra_buffers, path).use).llm
    tokens = llm.tokenize(SCENARIO.read_bytes() * 40)[:DEEP + PROMPT + GENERATED]
    found = {}
    for threads in [block.n_threads] if block.n_threads else thread_counts():
        llm._ctx.set_n_threads(threads, threads)
        measured = [per_token(llm, tokens[:depth], tokens[depth:depth + PROMPT + GENERATED]) for depth in (0, DEEP)]
        found[threads] = Rates((measured[0][0], measured[1][0]), (measured[0][1], measured[1][1]))
    llm.reset()
    return found


def per_token(llm, prefix: list[int], tokens: list[int]) -> tuple[float, float]:
    """Seconds per token: a prompt in one decode after `prefix`, then one token per decode."""
    llm._ctx.kv_cache_clear()
    llm.reset()
    if prefix:
        llm.eval(prefix)
    started = time.perf_counter()
    llm.eval(tokens[:PROMPT])
    prompt = (time.perf_counter() - started) / PROMPT
    started = time.perf_counter()
    for token in tokens[PROMPT:]:
        llm.eval([token])
    return prompt, (time.perf_counter() - started) / GENERATED


def mean_rates(*measured: dict[int, Rates]) -> dict[int, Rates]:
    def mean(pairs: list[tuple[float, float]]) -> tuple[float, float]:
        return statistics.fmean(p[0] for p in pairs), statistics.fmean(p[1] for p in pairs)

    return {n: Rates(mean([m[n].prompt for m in measured]), mean([m[n].generation for m in measured]))
            for n in measured[0]}


def rates_on(rates: dict[int, Rates], threads: Optional[int]) -> Rates:
    """The rates of the largest measured thread count not above `threads` (None: a server's call,
    which ran on the server's threads: the largest measured)."""
    fitting = [n for n in rates if threads is None or n <= threads] or [min(rates)]
    return rates[max(fitting)]


@dataclass(frozen=True)
class Work:
    """What one role (or the whole run) had the model do, how long it took, and the bound:
    llama.cpp's own time for those tokens on the threads each call ran on, at their positions
    (`shallow`: as if every token were at the start of a context, the bound before positions
    were counted)."""

    seconds: float = 0.0
    evaluated: int = 0
    generated: int = 0
    bound: float = 0.0
    shallow: float = 0.0

    def plus(self, other: "Work") -> "Work":
        return Work(self.seconds + other.seconds, self.evaluated + other.evaluated,
                    self.generated + other.generated, self.bound + other.bound, self.shallow + other.shallow)


def call_work(call: Call, rates: dict[int, Rates]) -> Work:
    evaluated = call.detail.evaluated or 0 if call.detail else 0
    threads = call.detail.threads if call.detail else None
    generated, position = call.usage.completion_tokens, call.usage.prompt_tokens
    on = rates_on(rates, threads)
    return Work(call.latency_s, evaluated, generated, on.seconds(evaluated, generated, position),
                evaluated * on.prompt[0] + generated * on.generation[0])


def work_per_role(t: Transcript, rates: dict[int, Rates]) -> dict[str, Work]:
    """Per role: the calls' model time, prompt tokens evaluated, tokens generated and bounds."""
    found: dict[str, Work] = {}
    for message, calls in calls_per_turn(t):
        for call in calls:
            found[message.role] = found.get(message.role, Work()).plus(call_work(call, rates))
    return found


def threads_used(t: Transcript) -> str:
    counts = Counter(c.detail.threads for c in t.of_type(Call) if c.detail and c.detail.threads)
    return ", ".join(f"{n} on {threads} thread{'s' * (threads > 1)}" for threads, n in sorted(counts.items())) or "not recorded"


def speed(name: str, t: Transcript, wall: float, rates: dict[int, Rates]) -> float:
    """Print the ratio and its parts; return the ratio of the process's wall time."""
    roles = work_per_role(t, rates)
    total = Work()
    for w in roles.values():
        total = total.plus(w)
    measured = "; ".join(f"{n} thread{'s' * (n > 1)} {shallow[0]:.0f} prompt tok/s, {shallow[1]:.1f} generation "
                         f"tok/s ({deep[0]:.0f}, {deep[1]:.1f} after {DEEP} tokens)"
                         for n, r in sorted(rates.items()) for shallow, deep in [(r.rate(), r.rate(shallow=False))])
    print(f"== speed, {name}: llama.cpp here on {measured}; the calls: {threads_used(t)}")
    print(f"  {'role':<12} {'model s':>8} {'evaluated':>9} {'generated':>9} {'bound s':>8} {'ratio':>6}")
    for role, w in sorted(roles.items()):  # a server's closed answers report no tokens: no bound
        print(f"  {role:<12} {w.seconds:8.1f} {w.evaluated:9d} {w.generated:9d} {w.bound:8.1f} "
              f"{w.seconds / w.bound if w.bound else float('nan'):6.2f}")
    conference = t.finished.wall_s if t.finished else float("nan")
    print(f"  {'all (wall)':<12} {wall:8.1f} {total.evaluated:9d} {total.generated:9d} {total.bound:8.1f} "
          f"{wall / total.bound:6.2f}   (the conference itself {conference:.1f}s, ratio {conference / total.bound:.2f}; "
          f"with every token's cost taken at the start of a context: bound {total.shallow:.1f}s, ratio "
          f"{wall / total.shallow:.2f}; targets: ratio <= 1.25, wall <= 25 s)")
    return wall / total.bound


def load_now() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def compare(seeds: Sequence[int], sides: dict[str, Side], folder: Path, model: Optional[str]) -> dict[str, list[float]]:
    """Each seed on each side, interleaved (the order alternates), llama.cpp's rates measured
    before and after each run; then each side's medians and each side's wall time against the
    first's. Returns each side's wall times."""
    ratios: dict[str, list[float]] = {side: [] for side in sides}
    walls: dict[str, list[float]] = {side: [] for side in sides}
    for n, seed in enumerate(seeds):
        for side in (list(sides) if n % 2 == 0 else list(reversed(sides))):
            before = llama_rates()
            print(f"-- seed {seed}, {side} ({load_now()})")
            out = folder / f"{side}-seed{seed}"
            folder.mkdir(parents=True, exist_ok=True)
            wall = run_seed(sides[side], seed, out, model)
            after = llama_rates()
            rates = mean_rates(before, after)
            ratios[side].append(speed(f"seed {seed}, {side}", transcripts_of([out])[0], wall, rates))
            walls[side].append(wall)
    for side in sides:
        print(f"== {side}: median wall {statistics.median(walls[side]):.1f}s, median ratio "
              f"{statistics.median(ratios[side]):.2f} over seeds {', '.join(map(str, seeds))} "
              f"(walls {', '.join(f'{w:.1f}' for w in walls[side])}; ratios "
              f"{', '.join(f'{r:.2f}' for r in ratios[side])})")
    first = next(iter(sides))
    for side in list(sides)[1:]:
        print(f"== {side} / {first} wall time: median {statistics.median(walls[side]) / statistics.median(walls[first]):.2f}x "
              f"(per seed {', '.join(f'{b / a:.2f}' for a, b in zip(walls[first], walls[side]))})")
    print(f"({load_now()} at the end)")
    return walls


def transcripts_of(paths: Sequence[Path]) -> list[Transcript]:
    """The conference transcripts of run folders or transcript files (moot.engine.source)."""
    found = [unit.load() for path in paths for unit in open_run(path).units if unit.path.is_file()]
    return [t for t in found if t.started.protocol == "conference"]


# ------------------------------------------------------------------ the evaluator's controls
CONTROLS = {  # issue 11 FINDINGS §5 (geval.py): a good excerpt, a recitation, a rude and incoherent debate
    "good": [
        ("Moderator", "Different communities prioritise different outcomes of drug policy: some emphasise less "
                      "drug-related crime, others fewer health risks. How do you suggest we assess drug policy outcomes?"),
        ("Participant_1", "Drug policies were long made from a crime-control perspective. That still matters, but we "
                          "must also count the health, social and economic consequences of drug use: overdoses, "
                          "infectious diseases and the costs of enforcement."),
        ("Participant_2", "I agree that we need several dimensions, and different substances may need different "
                          "assessments. We also cannot ignore human rights: drug policies have led to over-incarceration "
                          "and discrimination, so the evaluation must include effects on civil liberties."),
    ],
    "recitation": [
        ("Moderator", "An experienced decision-conference facilitator who stays neutral and keeps the group on task."),
        ("Participant_1", "A public-health researcher focused on health outcomes, prevention and treatment."),
        ("Participant_2", "A criminologist and human-rights lawyer focused on justice, civil liberties and social costs."),
    ],
    "rude": [
        ("Moderator", "Let's talk about criteria for drug policy outcomes."),
        ("Participant_1", "This is a stupid question and you are wasting my time. Banana policy cars the the the."),
        ("Participant_2", "Shut up. I will not talk to you. Whatever, 12 potatoes."),
    ],
}


def control_transcript(template: Transcript, turns_: Sequence[tuple[str, str]], path: Path) -> Path:
    """A finished one-topic conference holding `turns_` (the run_started of a real one)."""
    from moot.log.events import RunFinished
    from moot.protocols.conference.events import TopicClosed
    from moot.log.transcript import EventLog

    roles = {"Moderator": "moderator"}
    log = EventLog(path)
    log.append(template.started)
    for n, (speaker, text) in enumerate(turns_, 1):
        log.append(Message(turn=n, speaker=speaker, role=roles.get(speaker, "participant"),
                           action="open" if n == 1 else "speak", part=0, round=1, content=text))
    log.append(TopicClosed(topic=0, rounds=1, closed_by="agreement"),
               RunFinished(status="completed", stop_reason="a control debate"))
    log.close()
    return path


def controls(template: Transcript, folder: Path, model: str) -> None:
    print(f"== evaluator controls (moot score --role evaluator={model}); an informative evaluator ranks "
          "good above recitation and rude:")
    for name, debate in CONTROLS.items():
        path = control_transcript(template, debate, folder / f"control-{name}.jsonl")
        out = folder / f"control-{name}.scored.jsonl"
        subprocess.run([sys.executable, "-m", "moot", "score", str(path), "--role", f"evaluator={model}",
                        "--out", str(out)], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        score = load(out).of_type(Score)[-1]
        mean = statistics.fmean(score.scores[c] for c in CRITERIA) if score.parsed else float("nan")
        print(f"  {name:<10} mean of the ten criteria {mean:.2f}, overall "
              f"{score.overall if score.overall is None else f'{score.overall:.2f}'} ({score.method or 'written'})")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="*", type=Path, help="run folders or transcripts to read (default: run the seeds)")
    p.add_argument("--seeds", default="1,2", help="seeds to run, one process each (default 1,2)")
    p.add_argument("--against", metavar="PYTHON", help="also run the seeds, interleaved, with this interpreter "
                                                        "(an earlier version of moot)")
    p.add_argument("--model", help="--model for moot run (default: the scenario's, the embedded model)")
    p.add_argument("--out", type=Path, help="where the runs go (default: a temporary folder)")
    p.add_argument("--controls", action="store_true", help="also score the three control debates")
    p.add_argument("--server", action="store_true", help="also run the seeds, interleaved, through llama-server "
                                                         "serving the embedded model, declared `kind: base`")
    p.add_argument("--extra-buffers", action="store_true", help="run the seeds, interleaved, with llama.cpp's "
                                                                "extra buffer types forced on and forced off")
    args = p.parse_args()
    scenario = load_scenario(SCENARIO)
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        folder = args.out or Path(tmp) / "runs"
        sides = {"this": Side(sys.executable), **({"against": Side(args.against)} if args.against else {})}
        if args.extra_buffers and not args.runs:
            folder.mkdir(parents=True, exist_ok=True)
            sides = {f"buffers-{setting}": buffers_side(folder, setting) for setting in ("on", "off")}
        if args.server and not args.runs:
            folder.mkdir(parents=True, exist_ok=True)
            sides["server"] = server_side(folder, stack.enter_context(llama_server(folder)).url)
        walls = compare([int(s) for s in args.seeds.split(",")], sides, folder, args.model) if not args.runs else {}
        try:
            found = {"": transcripts_of(args.runs)} if args.runs else \
                {side: transcripts_of(sorted(folder.glob(f"{side}-seed*"))) for side in sides}
        except RunFolderError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if not any(found.values()):
            print("no conference transcripts found", file=sys.stderr)
            return 2
        if args.runs:
            rates = llama_rates()
            for t in found[""]:
                wall = t.finished.wall_s if t.finished else float("nan")
                speed(f"{t.path} (llama.cpp's rates measured now; the run's own wall time)", t, wall, rates)
        for side, transcripts in found.items():
            if side:
                print(f"==== {side}")
            quality(transcripts, scenario)
        found = found.get("this") or next(iter(found.values()))
        if args.controls:
            controls(found[0], Path(tmp), args.model or scenario.models.get("evaluator", scenario.models["default"]))
    if "server" in walls:
        print(f"server: llama-server wall/in-process {statistics.median(walls['server']) / statistics.median(walls['this']):.2f}")
    return 0


def quality(found: Sequence[Transcript], scenario: Scenario) -> None:
    """Issue 11's figures of each conference, and in all."""
    labels = scenario.speaker_labels()
    grams = echo_sources(scenario)
    totals = {k: 0 for k in ("turns", "echo", "imitate", "unfinished", "flat", "scores")}
    for t in found:
        f = report(t.started.unit or t.path.stem, t, grams, labels)
        for key in totals:
            totals[key] += len(f[key])
        excerpt(t, f, labels)
    n = totals["turns"]
    print(f"== all {len(found)} conference(s): echo {pct(totals['echo'], n)}, impersonation "
          f"{pct(totals['imitate'], n)}, mid-sentence {pct(totals['unfinished'], n)}, constant or monotone "
          f"score sets {totals['flat']} of {totals['scores']}")


if __name__ == "__main__":
    sys.exit(main())
