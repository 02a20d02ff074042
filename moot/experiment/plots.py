"""Plots a paper can use: labelled axes, the value on every bar, n, 95 % intervals as error bars,
a zero bar drawn as zero (an outline at the axis and its value), PNG and SVG.

Labels may hold any text a dataset or a user wrote (Weibo's Chinese, emoji, escape sequences):
every text is neutralised as in any report plot before it is saved (moot.kit.plots.neutralise:
drawn as written by a font that has each character, or replaced, never as mathtext), so a plot
never prints a missing-glyph warning.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Optional, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from moot.experiment.analysis import Analysis  # noqa: E402
from moot.experiment.dynamics import RoundStat  # noqa: E402
from moot.experiment.tables import headline  # noqa: E402
from moot.metrics.stats import Interval  # noqa: E402
from moot.kit.plots import neutralise  # noqa: E402

FORMATS = ("png", "svg")
SHORT = 14  # arm labels longer than this (one of them is enough) stand on the axis as A1..An, with a legend


def axis_names(labels: Sequence[str]) -> tuple[list[str], list[str]]:
    """What stands under the bars and the legend lines: the labels themselves when every one is
    short, else A1..An and `A1 = label` lines (long names overlap on an axis)."""
    if all(len(label) <= SHORT for label in labels):
        return list(labels), []
    short = [f"A{i}" for i in range(1, len(labels) + 1)]
    return short, [f"{s} = {label}" for s, label in zip(short, labels)]


def save(fig: Figure, folder: Path, stem: str) -> list[Path]:
    paths = []
    neutralise(fig)
    for ext in FORMATS:
        path = folder / f"{stem}.{ext}"
        fig.savefig(path, dpi=130)
        paths.append(path)
    plt.close(fig)
    return paths


def arm_bars(analysis: Analysis, folder: Path, stem: str, labels: Optional[Mapping[str, str]] = None,
             title: Optional[str] = None) -> list[Path]:
    """One bar per arm (under its label, `labels`: arm -> label): the mean, its 95 % interval, its
    value and n (items x repeats) beneath; `title`: its table's, which names the model (default:
    column and model axis)."""
    arms = list(analysis.arms)
    if not arms:
        return []
    names = [(labels or {}).get(a.arm, a.arm) for a in arms]
    means = [a.mean for a in arms]
    intervals = [headline(a) for a in arms]
    low = [0.0 if math.isnan(i.low) else max(0.0, m - i.low) for m, i in zip(means, intervals)]
    high = [0.0 if math.isnan(i.high) else max(0.0, i.high - m) for m, i in zip(means, intervals)]
    return _bars(analysis, names, means, intervals, low, high, folder, stem,
                 title or f"{analysis.column.name} · {analysis.model}")


def _bars(analysis: Analysis, names: list[str], means: list[float], intervals: list[Interval], low: list[float],
          high: list[float], folder: Path, stem: str, title: str) -> list[Path]:
    arms = list(analysis.arms)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(arms) + 2), 3.6))
    bars = ax.bar(range(len(arms)), means, yerr=[low, high], capsize=4, color="#4c72b0", edgecolor="#1f2f4f",
                  linewidth=1.0)
    for bar, mean, interval in zip(bars, means, intervals):
        top = mean + (0.0 if math.isnan(interval.high) else max(0.0, interval.high - mean))
        ax.annotate(f"{mean:.3f}", (bar.get_x() + bar.get_width() / 2, top), xytext=(0, 3),
                    textcoords="offset points", ha="center", va="bottom", fontsize=8)
        if mean == 0:  # a zero bar is visible as zero: an outline on the axis
            ax.plot([bar.get_x(), bar.get_x() + bar.get_width()], [0, 0], color="#1f2f4f", linewidth=2.5)
    ax.set_xticks(range(len(arms)))
    shown, legend = axis_names(names)
    ax.set_xticklabels([f"{n}\nn={a.items}×{len(a.values)}" for n, a in zip(shown, arms)], fontsize=8)
    if legend:
        ax.legend(handles=[Patch(visible=False)] * len(legend), labels=legend, loc="upper left", fontsize=7,
                  bbox_to_anchor=(1.01, 1.0), handlelength=0, handletextpad=0, frameon=False)
        fig.set_figwidth(fig.get_figwidth() + 0.07 * max(map(len, legend)))
        fig.subplots_adjust(right=1 - 0.07 * max(map(len, legend)) / fig.get_figwidth())
    ax.set_xlabel("arm (n = items × repeats)")
    ax.set_ylabel(analysis.column.metric)
    ax.set_ylim(0, max(1.0, max(m + h for m, h in zip(means, high)) * 1.12))
    ax.set_title(title, fontsize=9)
    ax.text(1.0, -0.28, "error bars: 95% CI (t over repeats; one repeat: bootstrap over items)",
            transform=ax.transAxes, ha="right", fontsize=6, color="#555555")
    return save(fig, folder, stem)


def round_lines(by_arm: Mapping[str, Sequence[RoundStat]], folder: Path, stem: str, title: str) -> list[Path]:
    """Accuracy per round, one line per arm, 95 % intervals as error bars, n per arm in the legend."""
    return lines({arm: [(s.round, s.accuracy) for s in found] for arm, found in by_arm.items()}, folder, stem, title,
                 "round (0: independent answers)", "accuracy of the agents' answers", (0.0, 1.05))


def lines(by_line: Mapping[str, Sequence[tuple[int, Interval]]], folder: Path, stem: str, title: str, xlabel: str,
          ylabel: str, ylim: Optional[tuple[float, float]] = None) -> list[Path]:
    """One line per key over integer steps, each point its estimate with its 95 % interval as error
    bars and its value written beside it; n (of the first point) in the legend."""
    if not by_line:
        return []
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for name, points in by_line.items():
        xs = [x for x, _ in points]
        ys = [i.estimate for _, i in points]
        err = [[0.0 if math.isnan(i.low) else max(0.0, i.estimate - i.low) for _, i in points],
               [0.0 if math.isnan(i.high) else max(0.0, i.high - i.estimate) for _, i in points]]
        n = points[0][1].n if points else 0
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=f"{name} (n={n})")
        for x, y in zip(xs, ys):
            ax.annotate(f"{y:.2f}", (x, y), xytext=(4, 4), textcoords="offset points", fontsize=7)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ylim:
        ax.set_ylim(*ylim)
    elif all(i.estimate >= 0 for points in by_line.values() for _, i in points):
        ax.set_ylim(bottom=0)  # a share or a count: its zero in sight
    ax.set_xticks(sorted({x for points in by_line.values() for x, _ in points}))
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    return save(fig, folder, stem)
