"""Whether the embedded model may use llama.cpp's extra buffer types on this machine.

An extra buffer type holds weights in a layout a CPU's special kernels read: Intel AMX tiles,
or weights repacked for AVX2/AVX-512 or Arm. They are chosen at load time
(`llama_model_params.use_extra_bufts`). On some CPUs they crash: on an Intel Xeon with AMX,
llama-cpp-python 0.3.36 segfaults in `ggml_backend_amx_mul_mat` on the first decode of the
Gemma GGUF (llama.cpp #20824, closed without a fix). Without them, the same model runs correctly
on the plain CPU kernels.

`backends.local.extra_buffers` says what to do: `on` or `off` forces the choice, and `auto` (the
default) asks the machine. A child process loads the model with extra buffers and decodes a prompt
and a few tokens (`python -m moot.models.backends.local.worker --check PATH`). If that ends well, extra
buffers are used. A crash, an error or a timeout turns them off. The check cannot take moot down,
and its answer is kept per machine, llama.cpp build and model file, in the user's cache folder.
A later crash of the model process with extra buffers on turns them off the same way
(`remember_crash`).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import metadata, util
from pathlib import Path
from typing import Callable, Literal, Optional

from moot.safety.diskio import write_atomic

Setting = Literal["auto", "on", "off"]
CHECK_TIMEOUT_S = 180.0  # the check loads a model and decodes ~50 tokens: a few seconds on a slow machine
CHECK_FILE = "extra-buffers.json"


@dataclass(frozen=True)
class Finding:
    """Whether a check found extra buffers safe, why, and what the check cost."""

    safe: bool
    why: str
    seconds: float = 0.0


@dataclass(frozen=True)
class Choice:
    """Whether the model loads with extra buffers, and what decided it (`setting`, `check`: run
    now, `cached`: an earlier check or crash on this machine)."""

    use: bool
    by: Literal["setting", "check", "cached"]
    why: str = ""

    def describe(self) -> str:
        said = f"extra buffers {'on' if self.use else 'off'}"
        return f"{said} ({self.by}{': ' + self.why if self.why else ''})"


Check = Callable[[str], Finding]


def choose(setting: Setting, model_path: str, check: Optional[Check] = None,
           store: Optional[Path] = None) -> Choice:
    """Whether to load `model_path` with extra buffers under `setting`. `auto` reads the machine's
    kept answer, or runs `check` (default: `run_check`) and keeps its answer in `store`."""
    if setting != "auto":
        return Choice(setting == "on", "setting")
    store = store or store_path()
    key = machine_key(model_path)
    kept = read_store(store).get(key)
    if isinstance(kept, dict) and isinstance(kept.get("safe"), bool):
        return Choice(kept["safe"], "cached", str(kept.get("why", "")))
    finding = (check or run_check)(model_path)
    remember(store, key, finding)
    return Choice(finding.safe, "check", finding.why)


def remember_crash(model_path: str, why: str, store: Optional[Path] = None) -> None:
    """The model process died with extra buffers on: later loads on this machine go without them."""
    remember(store or store_path(), machine_key(model_path), Finding(False, why))


def run_check(model_path: str, timeout_s: float = CHECK_TIMEOUT_S,
              command: Optional[list[str]] = None) -> Finding:
    """Load `model_path` with extra buffers in a child process and decode a little: safe when it
    exits 0. `command` replaces the child's command line (tests)."""
    argv = command or [sys.executable, "-m", "moot.models.backends.local.worker", "--check", model_path]
    started = time.monotonic()
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              timeout=timeout_s, start_new_session=True)
    except subprocess.TimeoutExpired:
        return Finding(False, f"the check did not finish within {timeout_s:g}s", time.monotonic() - started)
    except OSError as exc:
        return Finding(False, f"the check could not start ({exc.strerror or exc})", time.monotonic() - started)
    seconds = time.monotonic() - started
    if done.returncode == 0:
        return Finding(True, "a child process decoded with them", seconds)
    return Finding(False, f"the check {exit_cause(done.returncode)}", seconds)


def exit_cause(returncode: int) -> str:
    """`died with SIGSEGV (Segmentation fault)` or `exited with code 1`."""
    if returncode < 0:
        try:
            number = signal.Signals(-returncode)
            return f"died with {number.name} ({signal.strsignal(number) or number.name})"
        except ValueError:
            return f"died with signal {-returncode}"
    return f"exited with code {returncode}"


def cache_root() -> Path:
    """The user's cache folder for moot: $MOOT_CACHE_DIR, else $XDG_CACHE_HOME/moot, else ~/.cache/moot."""
    own = os.environ.get("MOOT_CACHE_DIR")
    return Path(own) if own else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "moot"


def store_path() -> Path:
    """Where answers are kept: in the user's cache folder for moot (`cache_root`)."""
    return cache_root() / CHECK_FILE


def read_store(store: Path) -> dict[str, object]:
    """The kept answers; a store that is missing or damaged keeps none (the check runs again)."""
    try:
        found = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def remember(store: Path, key: str, finding: Finding) -> None:
    """Keep `finding` for `key`; a cache folder that cannot be written keeps nothing (the check
    runs again next time)."""
    kept = read_store(store)
    kept[key] = {"safe": finding.safe, "why": finding.why, "seconds": round(finding.seconds, 3),
                 "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(store, json.dumps(kept, indent=1, sort_keys=True))
    except OSError:
        pass


def machine_key(model_path: str) -> str:
    """What an answer holds for: the CPU (its model and flags), the llama.cpp build (the package's
    version and its libraries' sizes and times) and the model file (path, size, time)."""
    parts = [platform.machine(), cpu_identity(), library_identity(), file_identity(Path(model_path))]
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:32]


def cpu_identity(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The first processor's model name and feature flags (Linux), else the platform's name."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor()
    wanted = ("model name", "flags", "features", "cpu part", "cpu implementer")
    lines = []
    for line in text.split("\n\n", 1)[0].splitlines():
        name, _, value = line.partition(":")
        if name.strip().lower() in wanted:
            lines.append(f"{name.strip().lower()}={' '.join(sorted(value.split()))}")
    return ";".join(lines) or platform.processor()


def library_identity() -> str:
    """llama-cpp-python's version and the size and time of each native library it ships."""
    try:
        version = metadata.version("llama-cpp-python")
    except metadata.PackageNotFoundError:
        version = "?"
    spec = util.find_spec("llama_cpp")
    folder = Path(spec.origin).parent / "lib" if spec is not None and spec.origin else None
    libraries = sorted(p for p in folder.iterdir() if p.is_file()) if folder is not None and folder.is_dir() else []
    return ";".join([version, *(f"{lib.name}:{file_identity(lib)}" for lib in libraries)])


def file_identity(path: Path) -> str:
    try:
        status = path.stat()
    except OSError:
        return f"{path}:missing"
    return f"{path}:{status.st_size}:{status.st_mtime_ns}"
