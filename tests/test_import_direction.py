"""moot's imports run down its layers and form no cycle; protocol code imports only the kit and the contract.

The graph is every import of every module of the package (also those inside functions and under
TYPE_CHECKING: a deferred import is still a dependency), read with `ast`. A package imports
packages of its own layer or below (LAYERS, lowest first, drawn in docs/architecture.md). A lower
layer learns of a higher one through a hook the higher one installs, never by importing it.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Optional

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"moot.agents": ROOT / "agents", "moot.speaker_selection": ROOT / "speaker_selection", "moot": ROOT / "moot"}

# Lowest first; a package may import its own layer and those below. A protocol's code spans
# agents/, speaker_selection/ and protocols/ (one layer), above the contract and the kit below it (what
# a protocol is handed and may use). Experiment grids run their cells through the Python API, so
# `experiment` stands above `api`. `moot` is the package's own __init__ (the API names) and __main__.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "plugins", "version"),
    ("safety",),
    ("metrics",),
    ("tracing",),  # spans of model calls (models), units and runs (engine)
    ("models",),
    ("log",),
    ("saved",),
    ("views",),
    ("scenario",),
    ("data",),
    ("kit",),
    ("contract",),
    ("engine",),
    ("agents", "speaker_selection", "protocols"),
    ("report",),
    ("api",),
    ("experiment",),
    ("viewer",),
    ("cli",),
    ("moot", "__main__"),
)

# Protocol code (the protocols' layer) imports moot's core through the kit (moot.kit, and its public
# submodules: seats, plots) and the contract only, never the kit's private modules (moot.kit._x).
PROTOCOL_PACKAGES = ("agents", "speaker_selection", "protocols")
KIT = ("moot.kit", "moot.contract")

@lru_cache(maxsize=1)
def modules() -> dict[str, Path]:
    """Every module of the package by name (agents/ and speaker_selection/ install as moot.agents, ...)."""
    found = {}
    for prefix, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            found[".".join((prefix, *path.relative_to(folder).with_suffix("").parts)).removesuffix(".__init__")] = path
    return found


def imported(path: Path) -> set[str]:
    """The moot modules a file names in its imports, wherever they stand: `from P import M` names
    the module P.M when there is one, else P."""
    known, found = modules(), set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & set(known)
            found |= submodules
            if len(submodules) < len(node.names):
                found.add(node.module)
    return found & set(known)


@lru_cache(maxsize=1)
def graph() -> dict[str, frozenset[str]]:
    return {name: frozenset(imported(path) - {name}) for name, path in modules().items()}


def package(module: str) -> str:
    return {"moot": "moot", "moot.__main__": "__main__"}.get(module) or module.split(".")[1]


def layer(module: str) -> int:
    return next(rank for rank, names in enumerate(LAYERS) if package(module) in names)


def backward() -> set[tuple[str, str]]:
    return {(source, target) for source, targets in graph().items() for target in targets
            if layer(target) > layer(source)}


def cycles(g: Optional[Mapping[str, frozenset[str]]] = None) -> list[set[str]]:
    """The strongly connected sets of more than one module of `g` (default: moot's graph), by
    Tarjan's algorithm, iteratively."""
    g = graph() if g is None else g
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(g[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_every_package_has_a_layer():
    assert {layer(module) for module in modules()} <= set(range(len(LAYERS)))


def test_no_import_runs_up_the_layers():
    assert sorted(backward()) == [], "imports running up the layers (LAYERS)"


def past_the_kit() -> set[tuple[str, str]]:
    """Imports of protocol code that name a core module other than the kit's public ones and the contract's."""
    return {(source, target) for source, targets in graph().items() if package(source) in PROTOCOL_PACKAGES
            for target in targets if package(target) not in PROTOCOL_PACKAGES
            and (not target.startswith(KIT) or target.startswith("moot.kit._"))}


def test_protocols_import_only_the_kit_and_the_contract():
    assert sorted(past_the_kit()) == [], "protocol code importing core modules past moot.kit"


def test_no_import_cycle():
    assert [sorted(c) for c in cycles()] == [], "import cycles"


def test_the_kit_names_what_it_exports():
    """The kit is one package whose `__all__` lists exactly the names it imports for protocols."""
    tree = ast.parse(modules()["moot.kit"].read_text(encoding="utf-8"))
    imported_names = {alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
                      and node.module != "__future__" for alias in node.names}
    exported = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets))
    assert isinstance(exported, ast.List)
    assert sorted(ast.literal_eval(exported)) == sorted(imported_names)


def test_the_graph_sees_deferred_imports_and_cycles():
    """The checks can fail: imports inside a function and under TYPE_CHECKING count, and a cycle is
    found as one."""
    assert "moot.report.runs" in graph()["moot.api.saved"]  # inside a function
    assert "moot.metrics.stats" in graph()["moot.contract.report"]  # under TYPE_CHECKING
    assert cycles({"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset({"a"})}) == \
        [{"a", "b", "c"}]


def test_no_command_imports_the_dispatcher():
    """moot.cli (the dispatcher) imports its commands by name (importlib, unseen by the graph); a
    command importing it back would be a cycle all the same."""
    assert sorted(name for name, targets in graph().items() if name.startswith("moot.cli.") and "moot.cli" in targets) == []
