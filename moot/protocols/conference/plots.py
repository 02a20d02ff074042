"""Conference runs drawn for a report: per run and group, one bar chart per measure the topics
have (rounds to agreement, evaluator overall, judge decision grade, reference covered), a bar per
topic at its mean over the group's conferences with its 95 % t interval as error bars (none from
one conference), its value and n written on it, and the measure on the y axis. PNG, through
moot.kit.plots.save (every text neutralised)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from moot.kit import t_interval
from moot.protocols.conference.report import ConferenceRun, Group, TopicStats  # noqa: E402
from moot.kit.plots import save, title  # noqa: E402

# (file stem, y-axis label, the topic's values)
MEASURES: tuple[tuple[str, str, Callable[[TopicStats], Sequence[float]]], ...] = (
    ("rounds", "rounds to agreement", lambda t: t.rounds),
    ("overall", "evaluator overall score (1-10)", lambda t: t.overall),
    ("grade", "judge decision grade (1-10)", lambda t: t.grades),
    ("coverage", "reference covered (fraction)", lambda t: t.coverage),
)


def conference_plots(runs: Sequence[ConferenceRun], folder: Path) -> list[Path]:
    """Every run's groups drawn, one plot per measure with values (module docstring)."""
    written = []
    for run in runs:
        for n, group in enumerate(run.groups, 1):
            for stem, label, values in MEASURES:
                if any(values(t) for t in group.topics):
                    written.append(_bars(run, group, label, values, folder / f"conference_{run.ref}_{n}_{stem}.png"))
    return written


def _bars(run: ConferenceRun, group: Group, label: str, values: Callable[[TopicStats], Sequence[float]],
          path: Path) -> Path:
    topics = [t for t in group.topics if values(t)]
    found = [t_interval(list(values(t))) for t in topics]
    means = [i.estimate for i in found]
    low = [0.0 if math.isnan(i.low) else i.estimate - i.low for i in found]
    high = [0.0 if math.isnan(i.high) else i.high - i.estimate for i in found]
    fig, ax = plt.subplots(figsize=(max(4.5, 1.1 * len(topics) + 2), 3.8))
    bars = ax.bar(range(len(topics)), means, yerr=[low, high], capsize=4, color="#4c72b0", edgecolor="#1f2f4f")
    for bar, mean, up in zip(bars, means, high):
        ax.annotate(f"{mean:.2f}", (bar.get_x() + bar.get_width() / 2, mean + up), xytext=(0, 3),
                    textcoords="offset points", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(topics)), [f"topic {t.number + 1}\nn={i.n}" for t, i in zip(topics, found)], fontsize=8)
    ax.set_xlabel("topic (n = conferences)")
    ax.set_ylabel(label)
    ax.set_ylim(bottom=0)
    ax.text(1.0, -0.3, "error bars: 95% t interval over the conferences (none from one)", transform=ax.transAxes,
            ha="right", fontsize=6, color="#555555")
    what = f" · {group.name}" if group.name else ""
    title(ax, f"{run.ref}{what} · {run.model}: {label} per topic")
    return save(fig, path)
