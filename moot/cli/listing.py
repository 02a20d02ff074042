"""`moot run --list`: what ships with moot, each with what it is: the scenarios (their protocol and
title), the experiments (their title) and the demo sets (their items and labels)."""

from __future__ import annotations

from typing import Callable, Iterable

from moot.api.bundled import bundled_experiments, bundled_scenarios, demo_sets
from moot.safety.neutral import terminal_safe


def scenarios() -> Iterable[tuple[str, str]]:
    return ((s.name, f"{s.protocol:<12} {s.title}") for s in bundled_scenarios())


def experiments() -> Iterable[tuple[str, str]]:
    return ((e.name, e.title) for e in bundled_experiments())


def demos() -> Iterable[tuple[str, str]]:
    return ((d.name, f"{d.items} items, labels {' / '.join(d.labels)}") for d in demo_sets())


SECTIONS: tuple[tuple[str, Callable[[], Iterable[tuple[str, str]]]], ...] = (
    ("scenarios (moot run NAME; protocol, title)", scenarios),
    ("experiments (moot run NAME --plan, then moot run NAME)", experiments),
    ("demo sets (moot run SCENARIO --dataset NAME)", demos))


def listing() -> str:
    lines = []
    for heading, rows in SECTIONS:
        found = list(rows())
        width = max(len(name) for name, _ in found)
        lines += [f"{heading}:", *(f"  {name:<{width}}  {text}" for name, text in found), ""]
    return terminal_safe("\n".join(lines).rstrip())
