"""The COLA scenario (`protocol: cola`): roles, label set, stages, models and prompt templates.

Ablations of the paper's Table 5 are plain data: `experts` lists the analysts that take part
(an empty list is "w/o text analysis stage") and `debate: false` is "w/o debating stage".
"""

from __future__ import annotations

from string import Template
from typing import Literal, Optional

from pydantic import model_validator

from moot.protocols.item_schema import (ItemScenario, Label, Labels, check_aliases, check_distinct,
                                        check_models, check_prompts)
from moot.scenario_blocks import Backends, Generation, Retry, Strict, fail

EXPERTS = ("linguist", "domain", "social")
JUDGER = "judger"


def debater_name(label: str) -> str:
    return "debater_" + "".join(c if c.isalnum() else "_" for c in label)

DEFAULT_LABELS = ("favor", "against", "neutral")
PAPER_OPTIONS = ("against", "favor", "neutral")  # "A: Against B: Favor C: Neutral"
TEMPLATE_FIELDS = frozenset({"text", "target", "role", "analysis", "analyses", "stance", "argument",
                             "arguments", "question", "choices", "labels"})


class LabelText(Strict):
    """How a label reads: option word (judger choices), stance phrase (debater), name (arguments)."""

    option: Optional[str] = None
    stance: Optional[str] = None
    name: Optional[str] = None


DEFAULT_LABEL_TEXT = {
    "favor": LabelText(option="Favor", stance="in favor of", name="in favor"),
    "against": LabelText(option="Against", stance="against", name="against"),
    "neutral": LabelText(option="Neutral", stance="neutral towards", name="neutral"),
    "none": LabelText(option="None", stance="neutral towards", name="neutral"),
}


class DomainRole(Strict):
    """The domain specialist's role: per target (case-insensitive), else the default template."""

    default: str = "domain specialist in the field of $target"
    targets: dict[str, str] = {}

    def for_target(self, target: str) -> str:
        by_lower = {k.strip().lower(): v for k, v in self.targets.items()}
        chosen = by_lower.get(target.strip().lower(), self.default)
        return Template(chosen).safe_substitute(target=target)


class Judger(Strict):
    output: Literal["json", "option"] = "json"


class ColaInputs(Strict):
    """One item given in the file (`--input KEY=VALUE` overrides): the text, its target, the domain role."""

    text: Optional[str] = None
    target: Optional[str] = None
    role: Optional[str] = None


class ColaScenario(ItemScenario):
    """COLA (Lan et al.): independent analysts, one debater per label, a judger that picks the stance."""

    PROTOCOL = "cola"

    protocol: Literal["cola"]
    title: str = "COLA stance detection"
    input: ColaInputs = ColaInputs()
    labels: Labels = list(DEFAULT_LABELS)
    options: Optional[list[Label]] = None
    label_text: dict[str, LabelText] = {}
    aliases: dict[str, str] = {}
    metric: Optional[Literal["f_avg", "macro_f1", "accuracy"]] = None
    experts: list[Literal["linguist", "domain", "social"]] = list(EXPERTS)
    debate: bool = True
    domain_role: DomainRole = DomainRole()
    judger: Judger = Judger()
    models: dict[str, str] = {"default": "local"}
    generation: Generation = Generation(temperature=0.0, max_tokens=256)
    retry: Retry = Retry()
    backends: Backends = Backends()
    prompts: dict[str, str] = {}

    @model_validator(mode="after")
    def _consistent(self) -> "ColaScenario":
        check_distinct(self.labels, "labels")
        if self.options is not None and sorted(self.options) != sorted(self.labels):
            raise fail("must list the same labels as `labels`, in the judger's option order", "options")
        check_distinct(self.experts, "experts")
        for key in self.label_text:
            if key not in self.labels:
                raise fail(f"not a label (labels: {', '.join(self.labels)})", "label_text", key)
        check_aliases(self.aliases, self.labels)
        check_models(self.models, ("default", "debaters", "judger", *EXPERTS,
                                   *(f"debater_{lab}" for lab in self.labels)))
        check_prompts(self.prompts, "cola", TEMPLATE_FIELDS)
        if self.metric == "f_avg" and not {"favor", "against"} <= set(self.labels):
            raise fail("f_avg needs the labels 'favor' and 'against'", "metric")
        return self

    @property
    def option_order(self) -> tuple[str, ...]:
        if self.options:
            return tuple(self.options)
        return PAPER_OPTIONS if set(self.labels) == set(PAPER_OPTIONS) else tuple(self.labels)

    def text_of(self, label: str) -> LabelText:
        base = DEFAULT_LABEL_TEXT.get(label, LabelText())
        given = self.label_text.get(label, LabelText())
        merged = {**base.model_dump(exclude_none=True), **given.model_dump(exclude_none=True)}
        return LabelText(**{"option": label.capitalize(), "stance": label, "name": label, **merged})

    def headline_metric(self) -> str:
        if self.metric:
            return self.metric
        return "f_avg" if set(self.labels) <= {"favor", "against", "none"} else "macro_f1"

    def roles(self) -> list[str]:
        debaters = [debater_name(lab) for lab in self.labels] if self.debate else []
        return list(self.experts) + debaters + [JUDGER]

    def model_keys(self, role: str) -> tuple[str, ...]:
        """models[role] > models['debaters'] (any debater) > models['default'] > local."""
        return (role, "debaters") if role.startswith("debater_") else (role,)
