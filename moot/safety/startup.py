"""One line even when moot cannot start: a dependency that is missing, broken or shadowed (a file
named like it in the folder `python -m moot` runs from, e.g. `yaml.py`) fails the first import of
it, wherever that is. Its line names the package and what to do, exit code 1; the traceback only
with MOOT_DEBUG=1.

This module imports nothing but the standard library (and moot.safety.secrets, which does the
same): the handler of a failed import must not import the failing package again.
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path
from types import TracebackType
from typing import Iterator, Optional

from moot.safety.secrets import describe

HINT = "MOOT_DEBUG=1 shows the traceback"


def startup_failure(exc: BaseException) -> Optional[str]:
    """`cannot start: ...` when `exc` is a dependency failing to import, else None."""
    found = failed_import(exc)
    if found is None:
        return None
    module, file = found
    package = module.split(".")[0]
    if isinstance(exc, ModuleNotFoundError) and exc.name == package:
        return (f"cannot start: the package {package!r} is not installed; install moot's dependencies "
                f"(pip install {distribution(package)}) ({HINT})")
    file = file if module == package else origin(package) or file
    if file and not installed(file):
        return (f"cannot start: {package!r} is imported from {file}, not from the installed package (a file "
                f"or folder named like it shadows it: rename it, or run moot from another folder) ({HINT})")
    return (f"cannot start: the package {package!r} is broken ({describe(exc)}); reinstall it "
            f"(pip install --force-reinstall {distribution(package)}) ({HINT})")


def origin(package: str) -> Optional[str]:
    """Where `package` is imported from (found, not run), if it is found."""
    from importlib.util import find_spec

    try:
        spec = find_spec(package)
    except Exception:  # noqa: BLE001 - finding it failed too: nothing to say where
        return None
    return spec.origin if spec is not None and spec.origin not in (None, "built-in", "frozen") else None


def failed_import(exc: BaseException) -> Optional[tuple[str, Optional[str]]]:
    """(module, its file) of the dependency whose import raised `exc`, or None (not an import's)."""
    if isinstance(exc, ImportError) and exc.name and not is_moot(exc.name):
        return exc.name, exc.path
    if isinstance(exc, SyntaxError) and exc.filename and (module := module_of(exc.filename)):
        return module, exc.filename
    found = [(name, file) for name, file in importing(exc.__traceback__) if not is_moot(name)]
    return found[-1] if found else None  # the innermost: the package that failed, not the one importing it


def importing(tb: Optional[TracebackType]) -> Iterator[tuple[str, Optional[str]]]:
    """(module name, file) of each module whose top-level code is running in `tb`, outermost first."""
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "<module>":
            name = frame.f_globals.get("__name__", "")
            if name and name != "__main__":
                yield name, frame.f_globals.get("__file__")
        tb = tb.tb_next


def is_moot(module: str) -> bool:
    return module == "moot" or module.startswith("moot.")


def installed(file: str) -> bool:
    """Is `file` where installed packages (or the standard library) live?"""
    places = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    where = os.path.realpath(file)
    return any(where.startswith(os.path.realpath(p) + os.sep) for p in places if p)


def module_of(file: str) -> Optional[str]:
    """The top-level module a file outside moot belongs to, by the import path it is found on."""
    import sys

    path = Path(os.path.realpath(file))
    for entry in sorted((e for e in sys.path if e), key=len, reverse=True):
        base = Path(os.path.realpath(entry))
        if base in path.parents:
            name = path.relative_to(base).parts[0].removesuffix(".py")
            return None if name == "moot" else name
    return None


def distribution(package: str) -> str:
    """The distribution that installs `package` (PyYAML for yaml), or the package's name."""
    try:
        from importlib import metadata

        return metadata.packages_distributions().get(package, [package])[0]
    except Exception:  # noqa: BLE001 - a broken metadata scan must not hide the line
        return package
