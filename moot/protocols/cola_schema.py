"""The COLA scenario (`protocol: cola`): roles, label set, stages, models and prompt templates.

Ablations of the paper's Table 5 are plain data: `experts` lists the analysts that take part
(an empty list is "w/o text analysis stage") and `debate: false` is "w/o debating stage".
"""

from __future__ import annotations

from string import Template
from typing import Annotated, Literal, Optional

from pydantic import Field, model_validator

from agents.prompts import default_templates
from moot.scenario import Backends, Generation, Retry, Strict, _check_spec, _fail

EXPERTS = ("linguist", "domain", "social")
DEFAULT_LABELS = ("favor", "against", "neutral")
PAPER_OPTIONS = ("against", "favor", "neutral")  # "A: Against B: Favor C: Neutral"
TEMPLATE_FIELDS = frozenset({"text", "target", "role", "analysis", "analyses", "stance", "argument",
                             "arguments", "question", "choices", "labels"})
Label = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]{0,31}$")]


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


class Inputs(Strict):
    text: Optional[str] = None
    target: Optional[str] = None
    role: Optional[str] = None


class ColaScenario(Strict):
    protocol: Literal["cola"]
    title: str = "COLA stance detection"
    input: Inputs = Inputs()
    labels: Annotated[list[Label], Field(min_length=2)] = list(DEFAULT_LABELS)
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
        if len(set(self.labels)) != len(self.labels):
            raise _fail("labels must be distinct", "labels")
        if self.options is not None and sorted(self.options) != sorted(self.labels):
            raise _fail("must list the same labels as `labels`, in the judger's option order", "options")
        if len(set(self.experts)) != len(self.experts):
            raise _fail("experts must be distinct", "experts")
        for key in self.label_text:
            if key not in self.labels:
                raise _fail(f"not a label (labels: {', '.join(self.labels)})", "label_text", key)
        for key, value in self.aliases.items():
            if value not in self.labels:
                raise _fail(f"maps to {value!r}, not a label", "aliases", key)
        allowed_roles = ("default", "debaters", "judger", *EXPERTS, *(f"debater_{lab}" for lab in self.labels))
        for key, spec in self.models.items():
            if key not in allowed_roles:
                raise _fail(f"unknown role (allowed: {', '.join(allowed_roles)})", "models", key)
            _check_spec(spec, "models", key)
        templates = default_templates("cola")
        for key, text in self.prompts.items():
            if key not in templates:
                raise _fail(f"unknown prompt (allowed: {', '.join(sorted(templates))})", "prompts", key)
            unknown = sorted(set(Template(text).get_identifiers()) - TEMPLATE_FIELDS)
            if unknown or not Template(text).is_valid():
                raise _fail(f"unknown placeholder ${unknown[0]}" if unknown else "malformed $placeholder",
                            "prompts", key)
        if self.metric == "f_avg" and not {"favor", "against"} <= set(self.labels):
            raise _fail("f_avg needs the labels 'favor' and 'against'", "metric")
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

    def templates(self) -> dict[str, str]:
        return {**default_templates("cola"), **self.prompts}

    def model_for(self, role: str) -> str:
        """models[role] > models['debaters'] (any debater) > models['default'] > local."""
        group = "debaters" if role.startswith("debater_") else None
        return (self.models.get(role) or (self.models.get(group) if group else None)
                or self.models.get("default", "local"))
