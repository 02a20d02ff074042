"""The layers under the protocols name none: no identifier outside moot/protocols names a protocol
or the conference's vocabulary (as /work/shared/tools/protocol_names.py counts them), and the
engine, the log and the views import no conference module, directly or through what they import."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MOOT = ROOT / "moot"
NAMES = re.compile(r"(?i)(conference|cola|s2mad|negotiation|debate|chateval|judge_eval|verdict|topic|evaluator|"
                   r"assessor|coverage)")
# Files of the report, metrics and run helper's part of issue 18, not moved yet: each must still
# name a protocol (strict), so a file that no longer does is taken off this list.
LAYERS = ("engine", "log", "views")
CONFERENCE = ("moot.protocols.conference", "moot.agents.conference", "moot.speaker_selection.conference")
PACKAGES = {"moot.agents": ROOT / "agents", "moot.speaker_selection": ROOT / "speaker_selection", "moot": MOOT}


def outside_protocols() -> list[str]:
    return sorted(str(f.relative_to(ROOT)) for f in MOOT.rglob("*.py") if "protocols" not in f.relative_to(ROOT).parts)


def protocol_names(path: Path) -> list[str]:
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return [f"{t.start[0]}:{t.string}" for t in tokens if t.type == tokenize.NAME and NAMES.search(t.string)]


@pytest.mark.parametrize("rel", outside_protocols())
def test_no_identifier_outside_the_protocols_names_one(rel):
    assert protocol_names(ROOT / rel) == []


def module_file(name: str) -> Path | None:
    """The file of a moot module (moot.agents and moot.speaker_selection live at the top)."""
    for prefix, folder in PACKAGES.items():
        if name == prefix or name.startswith(prefix + "."):
            base = folder.joinpath(*name[len(prefix):].lstrip(".").split(".")) if name != prefix else folder
            for found in (base.with_suffix(".py"), base / "__init__.py"):
                if found.is_file():
                    return found
    return None


def imports(path: Path, module_level: bool) -> set[str]:
    """The moot modules a file imports (with `module_level`, only those imported when it is)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if module_level else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names if module_file(f"{node.module}.{a.name}")}
    return {name for name in found if module_file(name)}


def layer_modules(layer: str) -> list[str]:
    return sorted("moot." + ".".join(f.relative_to(MOOT).with_suffix("").parts).removesuffix(".__init__")
                  for f in (MOOT / layer).rglob("*.py"))


def reached(start: str) -> set[str]:
    """Every moot module importing `start` imports too (module-level imports, transitively)."""
    seen, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            parts = name.split(".")
            todo += [".".join(parts[:n]) for n in range(2, len(parts))]  # its packages' __init__
            todo += sorted(imports(module_file(name), module_level=True))
    return seen


@pytest.mark.parametrize("layer", LAYERS)
def test_the_engine_log_and_views_import_no_conference_module(layer):
    for module in layer_modules(layer):
        direct = {m for m in imports(module_file(module), module_level=False) if m.startswith(CONFERENCE)}
        assert not direct, f"{module} imports {sorted(direct)}"
        through = sorted(m for m in reached(module) if m.startswith(CONFERENCE))
        assert not through, f"importing {module} imports {through}"


def test_the_graph_sees_a_conference_import():
    """The check above can fail: a conference module's own graph reaches the conference."""
    assert "moot.protocols.conference.events" in reached("moot.protocols.conference.protocol")
    assert "moot.agents.conference.agent" in reached("moot.protocols.conference.protocol")
