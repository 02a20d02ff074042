"""What a non-editable install gets: only the `moot` import name, every package, the bundled
scenarios, prompts, experiments, published figures and demo datasets, and `python -m moot run NAME
[--dataset DEMO]` working from any directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
SOURCES = ("pyproject.toml", "README.md", "moot", "agents", "speaker_selection", "scenarios", "experiments", "datasets")


def packages_on_disk() -> set[str]:
    """Every folder with an __init__.py under each package root, named as it installs."""
    roots = {"moot": "moot", **PYPROJECT["package-dir"]}
    assert set(roots.values()) == {"moot", "agents", "speaker_selection", "scenarios", "experiments", "datasets"}
    found = set()
    for package, folder in roots.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).parts
            if "__pycache__" not in relative:
                found.add(".".join((package, *relative)))
    return found


def test_the_packages_list_covers_every_package_folder():
    assert set(PYPROJECT["packages"]) == packages_on_disk()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the sources (the checkout gets no build/ or egg-info)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "src"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                            "--disable-pip-version-check", "-q", str(source), "-w", str(tmp / "dist")],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    [found] = (tmp / "dist").glob("moot-*.whl")
    return found


def test_the_wheel_installs_only_moot_with_its_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"moot", wheel.name.split("-py")[0] + ".dist-info"}
    for folder in ("scenarios", "agents/prompts", "experiments"):
        shipped = {Path(n).name for n in names if n.startswith(f"moot/{folder}/") and n.endswith(".yaml")}
        assert shipped == {p.name for p in (ROOT / folder).glob("*.yaml")}, folder
    demos = {n for n in names if n.startswith("moot/datasets/") and not n.endswith(".py")}
    assert demos == {f"moot/datasets/{p.relative_to(ROOT / 'datasets')}" for p in
                     [*(ROOT / "datasets").glob("demo-*.yaml"), *(ROOT / "datasets" / "demo").glob("*.jsonl")]}
    assert "moot/datasets/vast.yaml" not in names  # the others name data files users supply
    assert "moot/__main__.py" in names
    assert "moot/report/published.yaml" in names


def test_an_unpacked_wheel_runs_bundled_scenarios_by_name_from_elsewhere(wheel, tmp_path):
    site, cwd = tmp_path / "site", tmp_path / "elsewhere"
    zipfile.ZipFile(wheel).extractall(site)
    cwd.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}

    def python(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=300)

    where = python("-c", "import moot, moot.scenarios; print(moot.__file__); print(*moot.scenarios.__path__)")
    assert where.stdout.split() == [str(site / "moot" / "__init__.py"), str(site / "moot" / "scenarios")]
    for name in ("drug_policy", "cola"):
        out = tmp_path / f"run-{name}"
        ran = python("-m", "moot", "run", name, "--model", "scripted", "--out", str(out), "--quiet")
        assert ran.returncode == 0, ran.stderr
        assert f"run: {out} {'conferences' if name == 'drug_policy' else 'items'}=1 backend_calls=" in ran.stdout
        assert (out / "results.jsonl").read_text(encoding="utf-8").count('"status": "completed"') == 1
    for protocol, demo in (("cola", "demo-stance"), ("s2mad", "demo-rumour-veracity"),
                           ("negotiation", "demo-sentiment"), ("debate", "demo-stance")):
        out = tmp_path / f"run-{protocol}-{demo}"
        ran = python("-m", "moot", "run", protocol, "--dataset", demo, "--limit", "2", "--model", "scripted",
                     "--out", str(out), "--quiet")
        # The scripted model answers each in the form its protocol declares (moot.models.expect).
        assert ran.returncode == 0, ran.stderr
        assert f"run: {out} items=2 backend_calls=" in ran.stdout
    paper = python("-m", "moot", "run", "cola_table2", "--model", "scripted", "--plan")
    assert paper.returncode == 2 and len(paper.stderr.splitlines()) == 1, paper.stderr
    assert "semeval2016_test: no such dataset spec" in paper.stderr and "run from a clone" in paper.stderr
    with_demo = python("-m", "moot", "run", "cola_table2", "--dataset", "demo-stance", "--model", "scripted", "--plan")
    assert with_demo.returncode == 0, with_demo.stderr
    assert sorted(p.name for p in cwd.iterdir()) == [], "nothing written where it ran"
