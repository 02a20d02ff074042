"""`moot run SCENARIO [--dataset D] --vary KEY=V1,V2 --repeat N`: an experiment made on the command line.

The same grid an experiment file declares, for any protocol: each combination of the `--vary`
values is an arm (KEY a dotted path of the scenario, `rounds=1,2,3`, `judge.form=text,json`; or a
key of the protocol's own, e.g. a conference's `personas=SETS.yaml`), `model=A,B` is the models
axis, `seed=1,2,3` the seeds, `--repeat N` the repeats. The first arm is the reference. Its
folder (default transcripts/SCENARIO[-DATASET]-grid[-KEYS]) holds `experiment.yaml` (the file
this command stands for), the manifest and one run folder per cell, so running the command again
continues it, more values or repeats run only their new cells, and `moot report FOLDER` gives
its findings.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any, Optional, Sequence

import yaml

from moot.contract.vary import find_key
from moot.errors import UsageError, nearest
from moot.experiment.schema import Experiment, ExperimentError, experiment_from
from moot.protocols.registry import REGISTRY
from moot.scenario.load import load_scenario
from moot.safety.yamlsource import format_key, parse_yaml

AXES = ("seed", "model")  # --vary keys that are axes of the grid, not arms


def parse(items: Sequence[str]) -> list[tuple[str, list[str]]]:
    """`KEY=V1,V2,...` items in order (one key once)."""
    found: list[tuple[str, list[str]]] = []
    for item in items:
        key, sep, values = item.partition("=")
        chosen = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not key.strip() or not chosen:
            raise UsageError(f"--vary {item!r}: expected KEY=V1,V2,... (a scenario key by its dotted path, model or seed)")
        if key.strip() in [k for k, _ in found]:
            raise UsageError(f"--vary {key.strip()}: given twice; give its values once, comma-separated")
        found.append((key.strip(), chosen))
    return found


def wanted(scenario_path: Path, vary: Sequence[str], repeat: Optional[int]) -> bool:
    """Whether the command stands for an experiment: with --repeat, for a protocol that runs items,
    or with a --vary key its protocol's batch of variants does not know (a dotted scenario path)."""
    if repeat:
        return True
    if not vary:
        return False
    protocol = REGISTRY.get(load_scenario(scenario_path).protocol)
    return bool(protocol.units.items) or any(find_key(protocol.vary, key) is None for key, _ in parse(vary))


def _value(text: str) -> Any:
    """A value as YAML reads it (`3` a number, `true` a boolean, `text` text)."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


VaryArm = tuple[str, str, dict[str, Any]]  # name, label, overrides


def _arm_sets(scenario_path: Path, axes: Sequence[tuple[str, list[str]]]) -> list[VaryArm]:
    """(name, label, overrides) per combination of values: a protocol's own vary key applies its values
    to the scenario's data (the top-level keys it changes become the overrides); any other key is a
    dotted path. The name says every key and value (`calibration-none_generation.temperature-0.8`);
    the label, for tables and plots, the values with the last part of their key (`calibration=none,
    temperature=0.8`)."""
    scenario = load_scenario(scenario_path)
    protocol = REGISTRY.get(scenario.protocol)
    data = scenario.model_dump(exclude_unset=True)
    options: list[list[tuple[str, str, dict[str, Any]]]] = []  # per key: (key, value, overrides)
    for key, values in axes:
        own = find_key(protocol.vary, key)
        if own is None and key.split(".")[0] not in type(scenario).model_fields:
            names = [k.name for k in protocol.vary]
            raise UsageError(f"--vary {key}: not a key of the {protocol.name} scenario nor one of its vary keys "
                             f"({', '.join(names)}){nearest(key, [*names, *type(scenario).model_fields])}")
        if own is None:
            options.append([(key, v, {key: _value(v)}) for v in values])
            continue
        try:
            choices = own.choices(values, scenario)
            changed = [(c.label, own.apply(data, c.value)) for c in choices]
        except ValueError as exc:
            raise UsageError(f"--vary {key}: {exc}") from None
        options.append([(key, label, {k: v for k, v in new.items() if data.get(k) != v}) for label, new in changed])
    arms = []
    for combination in itertools.product(*options):
        name = "_".join(f"{key}-{value}" for key, value, _ in combination) or scenario_path.stem
        label = ", ".join(f"{key.rsplit('.', 1)[-1]}={value}" for key, value, _ in combination) or scenario_path.stem
        arms.append((re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:60] or "arm", label,
                     {k: v for _, _, sets in combination for k, v in sets.items()}))
    return arms


def default_out(scenario_path: Path, dataset: Optional[Path], keys: Sequence[str]) -> Path:
    """transcripts/SCENARIO[-DATASET]-grid[-KEYS]: named by what varies, not by its values, so more
    values (or repeats) continue the same experiment."""
    name = "-".join([scenario_path.stem, *([dataset.stem] if dataset else []), "grid", *keys])
    return Path("transcripts") / re.sub(r"[^A-Za-z0-9._-]+", "-", name)[:60]


def experiment(scenario_path: Path, dataset: Optional[Path], vary: Sequence[str], repeat: Optional[int],
               limit: Optional[int], out: Optional[Path]) -> tuple[Experiment, Path]:
    """The experiment the command stands for, checked as a file is, and its folder; nothing written."""
    given = parse(vary)
    seeds = next((v for k, v in given if k == "seed"), None)
    if seeds and repeat:
        raise UsageError("--repeat: --vary seed=... names the seeds already; give one of them")
    folder = out or default_out(scenario_path, dataset, [k for k, _ in given])
    arms = _arm_sets(scenario_path, [(k, v) for k, v in given if k not in AXES])
    body: dict[str, Any] = {
        "experiment": re.sub(r"[^A-Za-z0-9._-]+", "-", folder.name).strip("-.")[:60] or "grid",
        "title": f"{scenario_path.stem}: " + (", ".join(f"{k} = {', '.join(v)}" for k, v in given) or "repeats"),
        "arms": [{"name": name, "label": label, "scenario": str(scenario_path.resolve()),
                  **({"set": sets} if sets else {})} for name, label, sets in arms]}
    if dataset is not None:
        body["datasets"] = [str(dataset.resolve())]
    models = next((v for k, v in given if k == "model"), None)
    body.update({k: v for k, v in (("models", models), ("limit", limit), ("repeats", repeat)) if v})
    if seeds:
        try:
            body["seeds"] = [int(s) for s in seeds]
        except ValueError:
            raise UsageError(f"--vary seed={','.join(seeds)}: a seed is a whole number") from None
    if len(arms) > 1:
        body["compare"] = {"reference": arms[0][0]}
    text = "# made by: moot run " + " ".join([str(scenario_path), *(["--dataset", str(dataset)] if dataset else []),
                                              *(f"--vary {item}" for item in vary),
                                              *(["--repeat", str(repeat)] if repeat else [])]) + "\n"
    text += yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=1000)
    path = folder / "experiment.yaml"
    try:
        found = experiment_from(parse_yaml(text, "--vary/--repeat"), path)
    except ExperimentError as exc:  # a line of the YAML it made means nothing to the user: the key does
        raise UsageError(f"--vary/--repeat: {format_key(exc.key)}: {exc.detail}") from None
    return Experiment(found.spec, path, found.arms, found.datasets, found.derived, text), folder
