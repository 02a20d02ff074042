"""What `--vary` changes in a conference: the seed, every agent's model, and persona sets.

`--vary model=SPEC` puts every agent on SPEC: the scenario's `models:` becomes `{default: SPEC}`
and the models its agents name themselves are dropped. `--vary personas=SETS.yaml` reads a list
of persona sets, each a list of participants ({name, persona}) or a mapping name -> persona of
the scenario's participants; the sets are labelled set1, set2, ... in unit ids and variants.
"""

from __future__ import annotations

from typing import Sequence

from pydantic import BaseModel

from moot.contract.vary import SEED, Choice, Data, VaryKey, apply_model
from moot.kit import UsageError, nearest, read_yaml
from moot.protocols.conference.schema import Scenario

AGENT_ROLES = ("moderator", "judge", "evaluator")  # roles that may name a model of their own


def apply_agents_model(data: Data, value: object) -> Data:
    """Every agent on one model: `models: {default: SPEC}`, agents' own `model:` dropped."""
    data = apply_model(data, value)
    for role in AGENT_ROLES:
        spec = data.get(role)
        if isinstance(spec, dict):
            data[role] = {k: v for k, v in spec.items() if k != "model"}
    participants = data.get("participants")
    if isinstance(participants, list):
        data["participants"] = [{k: v for k, v in p.items() if k != "model"} if isinstance(p, dict) else p
                                for p in participants]
    return data


def persona_choices(values: Sequence[str], scenario: BaseModel) -> list[Choice]:
    """`personas=SETS.yaml`: one choice per persona set in the file (module docstring)."""
    if len(values) != 1:
        raise UsageError("--vary personas=FILE: one YAML file listing the persona sets")
    if not isinstance(scenario, Scenario):
        raise UsageError("--vary personas: the scenario has no participants")
    return [Choice(f"set{i + 1}", s) for i, s in enumerate(persona_sets(values[0], scenario))]


def persona_sets(path: str, scenario: Scenario) -> list[list[dict[str, object]]]:
    source = read_yaml(path)
    sets = source.data
    if not isinstance(sets, list) or not sets:
        raise UsageError(f"{path}: expected a list of persona sets")
    names = [p.name for p in scenario.participants]
    out: list[list[dict[str, object]]] = []
    for i, entry in enumerate(sets):
        if isinstance(entry, dict):
            unknown = [k for k in entry if k not in names]
            if unknown:
                raise UsageError(f"{path}:{source.line_of((i, unknown[0]))}: [{i}].{unknown[0]}: not a participant "
                                 f"of the scenario{nearest(str(unknown[0]), names)} (participants: {', '.join(names)})")
            out.append([{**p.model_dump(exclude_none=True), "persona": entry.get(p.name, p.persona)}
                        for p in scenario.participants])
        elif isinstance(entry, list):
            out.append(entry)
        else:
            raise UsageError(f"{path}:{source.line_of((i,))}: [{i}]: a persona set is a list of participants "
                             "or a mapping name -> persona")
    return out


def apply_personas(data: Data, value: object) -> Data:
    return {**data, "participants": value}


MODEL = VaryKey("model", "every agent on this model spec, the agents' own models dropped", apply_agents_model)
PERSONAS = VaryKey("personas", "the participants' personas, one set after another from a YAML file listing them",
                   apply_personas, persona_choices)
VARY = (SEED, MODEL, PERSONAS)
