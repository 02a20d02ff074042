"""Torture: one line even when moot cannot start — a dependency shadowed by a file or folder named
like it in the folder moot runs from (`python -m moot` puts it first on the import path), broken
where it is installed, or missing altogether. Each is one line naming the package and what to do,
exit code 1, no traceback (MOOT_DEBUG=1 adds it), whichever command imports it first; the handler
never imports it again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from fault_server import FaultServer
from torture_support import ROOT, case, write

VALIDATE = ["validate", ROOT / "scenarios" / "drug_policy.yaml"]


def moot_in(folder: Path, *argv, python: str = sys.executable, flags=(), env=None) -> subprocess.CompletedProcess:
    return subprocess.run([python, *flags, "-m", "moot", *map(str, argv)], cwd=folder, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


def assert_one_line(proc, *phrases: str) -> str:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == "", proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot start: "), proc.stderr
    assert "MOOT_DEBUG=1 shows the traceback" in lines[0]
    for phrase in phrases:
        assert phrase in lines[0], lines[0]
    return lines[0]


# what shadows -> (its file (relative), its text, the package named)
SHADOWS = {"a yaml.py that raises": ("yaml.py", "raise RuntimeError('I am not PyYAML')\n", "yaml"),
           "an empty pydantic.py": ("pydantic.py", "x = 1\n", "pydantic"),
           "an autogen_core folder with a syntax error": ("autogen_core/__init__.py", "def (\n", "autogen_core")}


@pytest.mark.parametrize("shadow", sorted(SHADOWS))
def test_a_shadowed_dependency_is_one_line_naming_it_and_its_file(shadow, tmp_path):
    file, text, package = SHADOWS[shadow]
    write(tmp_path / file, text)
    with case("bad inputs", "start-up"):
        proc = moot_in(tmp_path, *VALIDATE)
        assert_one_line(proc, repr(package), str(tmp_path / file), "shadows it")


def test_a_shadowed_backend_library_is_one_line_when_the_run_loads_it(tmp_path):
    """The openai SDK is imported only when an `openai:` model is used: the line comes then."""
    write(tmp_path / "openai" / "__init__.py", "def (\n")
    with FaultServer("ok") as server, case("bad inputs", "start-up"):
        proc = moot_in(tmp_path, "run", "cola", "--model", "openai:m", "--base-url", server.url, "--out",
                       tmp_path / "run", env={"NO_PROXY": "127.0.0.1"})
        assert_one_line(proc, "'openai'", str(tmp_path / "openai" / "__init__.py"))
        assert not server.requests


def test_missing_dependencies_are_one_line_naming_the_first(tmp_path):
    """`python -S`: no site-packages, so every dependency is missing (moot itself comes from the
    checkout on PYTHONPATH)."""
    with case("bad inputs", "start-up"):
        proc = moot_in(tmp_path, *VALIDATE, flags=["-S"], env={"PYTHONPATH": str(ROOT)})
        assert_one_line(proc, "is not installed", "pip install")


@pytest.fixture
def venv_with_a_broken_yaml(tmp_path):
    """A fresh virtual environment whose own site-packages holds a broken `yaml` package, in front
    of the test environment's packages (moot's among them), added by a .pth file."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    purelib = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    write(purelib / "yaml" / "__init__.py", "from yaml.missing_part import *\n")
    write(purelib / "outer.pth", f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    return python, purelib


def test_a_broken_installed_dependency_is_one_line_saying_reinstall(venv_with_a_broken_yaml, tmp_path):
    python, purelib = venv_with_a_broken_yaml
    with case("bad inputs", "start-up"):
        proc = moot_in(tmp_path, *VALIDATE, python=python)
        assert_one_line(proc, "'yaml'", "is broken", "pip install --force-reinstall PyYAML")


def test_moot_debug_adds_the_traceback_and_the_line_still_ends_it(tmp_path):
    write(tmp_path / "yaml.py", "raise RuntimeError('I am not PyYAML')\n")
    with case("bad inputs", "start-up"):
        proc = moot_in(tmp_path, *VALIDATE, env={"MOOT_DEBUG": "1"})
        assert proc.returncode == 1
        assert proc.stderr.startswith("Traceback") and "RuntimeError: I am not PyYAML" in proc.stderr
        assert proc.stderr.strip().splitlines()[-1].startswith("error: cannot start: 'yaml'")


def test_run_conference_py_is_the_same_program(tmp_path):
    write(tmp_path / "yaml.py", "raise RuntimeError('I am not PyYAML')\n")
    with case("bad inputs", "start-up"):
        proc = subprocess.run([sys.executable, str(ROOT / "run_conference.py"), *map(str, VALIDATE)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(tmp_path)})
        assert_one_line(proc, "'yaml'", str(tmp_path / "yaml.py"))
