"""Every one-line error derives from MootError and carries its exit code; the command line maps
by that code (no hand-kept list of classes), printing one line and no traceback."""

from __future__ import annotations

import importlib

import pytest

import moot.cli
from moot.cli import main
from moot.errors import MootError, UsageError

# Where each one-line error lives (importing them registers them as MootError subclasses).
ERRORS = {
    "moot.errors": ["UsageError"],
    "moot.safety.yamlsource": ["SourceError"],
    "moot.scenario.errors": ["ScenarioError"],
    "moot.data.spec": ["DatasetError"],
    "moot.log.events": ["TranscriptError"],
    "moot.saved.files": ["RunFolderError"],
    "moot.engine.runner": ["ResumeError"],
    "moot.models.cache": ["CacheError"],
    "moot.models.provider": ["MissingKey"],
    "moot.models.preflight": ["Unreachable"],
    "moot.models.prices": ["PriceFileError"],
    "moot.saved.run": ["RunError"],
    "moot.safety.places": ["OutError"],
    "moot.experiment.schema": ["ExperimentError"],
    "moot.experiment.grid": ["ExperimentChanged"],
    "moot.data.threads": ["ConvertError"],
    "moot.log.annotations": ["AnnotationError"],
    "moot.viewer.paths": ["Refused"],
    "moot.viewer.pages": ["NotFound"],
}
CASES = [(module, name) for module, names in ERRORS.items() for name in names]
# One-line errors of the environment (exit 3): a tool or a download a command needs is missing.
ENVIRONMENT = [("moot.models.backends.local.llama_server", "BuildError"), ("moot.models.cache", "CacheBusy"),
               ("moot.tracing", "TracingUnavailable"), ("moot.viewer.rating", "CannotServe")]


def error_class(module: str, name: str) -> type[MootError]:
    found = getattr(importlib.import_module(module), name)
    assert isinstance(found, type) and issubclass(found, MootError), f"{module}.{name}"
    return found


def make(cls: type[MootError]) -> MootError:
    from moot.safety.yamlsource import SourceError

    if issubclass(cls, SourceError):
        return cls("file.yaml", "a problem", ("key",), 3)
    return cls("file.yaml:3: key: a problem")


@pytest.mark.parametrize("module, name", CASES + ENVIRONMENT)
def test_each_error_class_exits_with_its_code_in_one_line(module, name, monkeypatch, capsys):
    cls = error_class(module, name)
    if (module, name) in ENVIRONMENT:
        assert cls.exit_code == 3  # the environment refused (README: exit codes)
    else:
        assert cls.exit_code == 2  # bad input (README: exit codes)
        assert issubclass(cls, ValueError)  # callers that caught ValueError still do

    def fail(argv):
        raise make(cls)

    monkeypatch.setattr(moot.cli, "dispatch", fail)
    assert main(["anything"]) == cls.exit_code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: file.yaml:3: key: a problem"), err


def test_a_new_error_class_is_mapped_by_its_exit_code_alone(monkeypatch, capsys):
    class Refused(MootError):
        exit_code = 3

    def fail(argv):
        raise Refused("disk.img: read-only")

    monkeypatch.setattr(moot.cli, "dispatch", fail)
    assert main(["x"]) == 3
    assert capsys.readouterr().err == "error: disk.img: read-only\n"


def test_every_one_line_error_in_moot_is_listed_here():
    """A MootError subclass not in the table above would go untested: list every one there is."""
    for module in ("moot.cli.run", "moot.cli.score", "moot.cli.report", "moot.cli.llama_server",
                   "moot.models.backends.local.llama_server", "moot.protocols.registry"):
        importlib.import_module(module)
    seen, todo = set(), [MootError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("moot.") and sub not in seen:
                seen.add(sub)
                todo.append(sub)
    listed = {error_class(m, n) for m, n in CASES + ENVIRONMENT}
    protocols = {c for c in seen if c.__module__.startswith("moot.protocols.")}
    assert seen - protocols == listed, sorted(c.__qualname__ for c in seen - protocols - listed)
    assert all(c.exit_code == 2 for c in protocols)


def test_usage_error_is_the_cli_usage_error():
    assert main(["no-such-command-or-scenario"]) == UsageError.exit_code
