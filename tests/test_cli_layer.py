"""The command line is a thin layer over the Python API (issue 30, 5): each module of moot/cli parses
its arguments, calls the API and prints, and imports of moot only the API (moot.api, the experiment
and viewer functions that stand above it, the public names of `moot`), the errors, its own helpers
and the neutralising of what it prints; what does not yet is listed below with its reason, and the
list only shrinks (an entry that no longer holds fails the test, as does a new import).

The imports are read with `ast`, every kind (inside functions, under TYPE_CHECKING), as
tests/test_import_direction.py reads them.
"""

from __future__ import annotations

import re

from test_import_direction import imported, modules

ALLOWED = re.compile(r"^moot(\.api(\.\w+)?|\.experiment\.api|\.viewer\.api|\.errors|\.version|\.cli(\.\w+)?"
                     r"|\.safety\.neutral)?$")

# module -> {imported module: why it cannot move behind the API}: what is left is the command line
# as a process (its signals and exit codes, its one error line, its arguments as bytes)
KNOWN: dict[str, dict[str, str]] = {
    "moot.cli": {
        "moot.safety.diskio": "main() turns an environment error (disk full, read-only) into one line",
        "moot.safety.secrets": "main() redacts secrets from the one error line",
        "moot.safety.signals": "the process's signal handling and exit codes",
        "moot.safety.startup": "main() names a dependency that failed to load",
    },
    "moot.cli.options": {
        "moot.safety.utf8": "refuses the process's arguments that are not UTF-8",
    },
    "moot.cli.run": {
        "moot.safety.signals": "the exit code of a run stopped by a signal",
    },
}


def past_the_api() -> dict[str, set[str]]:
    """Each module of moot/cli and what it imports of moot besides the API, the errors and its own helpers."""
    found = {name: {m for m in imported(path) if not ALLOWED.match(m)}
             for name, path in modules().items() if name == "moot.cli" or name.startswith("moot.cli.")}
    return {name: past for name, past in found.items() if past}


def test_the_command_line_imports_the_api_and_what_is_listed_only():
    found = past_the_api()
    new = {name: sorted(past - KNOWN.get(name, {}).keys()) for name, past in found.items()}
    assert not {name: past for name, past in new.items() if past}, \
        "a command reaches past the Python API: call (or add) an API function instead"
    fixed = {name: sorted(set(listed) - found.get(name, set())) for name, listed in KNOWN.items()}
    assert not {name: gone for name, gone in fixed.items() if gone}, "no longer imported: take it off KNOWN"


def test_every_listed_reason_is_given():
    assert all(reason.strip() for listed in KNOWN.values() for reason in listed.values())
