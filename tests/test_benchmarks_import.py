"""Every benchmark script still imports: they run by hand, not in CI, so a module moved under them
(issue 30 moved the backends and the saved-run readers) would otherwise surface only when someone
needs a figure."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize("script", sorted(p.name for p in BENCHMARKS.glob("*.py")))
def test_benchmark_imports(script: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    name = f"benchmark_{script.removesuffix('.py')}"
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)  # the top level only: each script's work sits under __main__
