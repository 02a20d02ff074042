"""docs/api.md's worked example runs as written: its Python blocks, in order, in one namespace,
from the repository's folder (it reads datasets/), writing only under pytest's temporary folder."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "api.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def test_the_worked_example_runs(tmp_path, monkeypatch, capsys):
    blocks = python_blocks(DOC.read_text(encoding="utf-8"))
    assert len(blocks) >= 5
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = sorted(p.name for p in ROOT.iterdir())
    namespace: dict[str, object] = {}
    for number, block in enumerate(blocks, 1):
        exec(compile(block, f"{DOC}:block {number}", "exec"), namespace)  # noqa: S102 - the project's own doc
    out = capsys.readouterr().out
    assert "completed 2 of 2 units" in out
    assert "did you mean 'drug_policy'?" in out
    assert sorted(p.name for p in ROOT.iterdir()) == before  # nothing written beside the repository's files
    work = namespace["work"]
    assert isinstance(work, Path) and work.parent == tmp_path
    assert (work / "report" / "report.md").is_file() and (work / "cola.md").is_file()
    assert (work / "exp" / "experiment.json").is_file() and (work / "exp-report" / "experiment.md").is_file()
    assert "4 of 4 cells completed" in out and "| cola |" in namespace["tables"].main
