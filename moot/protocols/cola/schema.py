"""The COLA scenario (`protocol: cola`): roles, label set, stages, models and prompt templates.

Ablations of the paper's Table 5 are plain data: `experts` lists the analysts that take part
(an empty list is "w/o text analysis stage") and `debate: false` is "w/o debating stage". The
LLM baselines of Table 2 are the judger alone (`experts: []`, `debate: false`) asked with a
baseline prompt (`baseline: direct | cot`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property
from string import Template
from typing import Literal, Mapping, Optional

from pydantic import model_validator

from moot.protocols.items.schema import (MAX_UNPARSED, LabelledScenario, Label, Labels, MaxUnparsed, TurnTokens,
                                         check_aliases, check_distinct)
from moot.kit import (
    Backends, CalibrationSetting, ChoiceSetting, Generation, Retry, Strict, check_models, check_prompts, fail,
)

Expert = Literal["linguist", "domain", "social"]
EXPERTS: tuple[Expert, ...] = ("linguist", "domain", "social")
JUDGER = "judger"


@cache
def debater_name(label: str) -> str:
    return "debater_" + "".join(c if c.isalnum() else "_" for c in label)

DEFAULT_LABELS = ("favor", "against", "neutral")
# The domain specialist per SemEval-2016 target, from the authors' code (tsinghua-fib-lab/COLA,
# cola.py `target_role_map`); the paper itself does not give it.
SEMEVAL_ROLES = {
    "Atheism": "theologian",
    "Climate Change is a Real Concern": "environmental scientist",
    "Feminist Movement": "sociologist",
    "Hillary Clinton": "political scientist",
    "Legalization of Abortion": "sociologist",
    "Donald Trump": "political scientist",
}
PAPER_OPTIONS = ("against", "favor", "neutral")  # "A: Against B: Favor C: Neutral"
TEMPLATE_FIELDS = frozenset({"text", "target", "role", "analysis", "analyses", "stance", "argument",
                             "arguments", "question", "choices", "labels"})


class LabelText(Strict):
    """How a label reads: option word (judger choices), stance phrase (debater), name (arguments)."""

    option: Optional[str] = None
    """Its option word in the judger's choices (e.g. `Favor`)."""
    stance: Optional[str] = None
    """Its stance phrase for the debater (e.g. `in favor of`)."""
    name: Optional[str] = None
    """Its name in the arguments (e.g. `in favor`)."""
    answer: Optional[str] = None
    """Document form (a base model): the words that follow the judger's `document_answer` line
    for this label (e.g. `positive`); the most likely is the answer."""


@dataclass(frozen=True)
class LabelWords:
    """A label's LabelText with every word given: the file's, else the default's, else its own."""

    option: str
    stance: str
    name: str
    answer: str


DEFAULT_LABEL_TEXT = {
    "favor": LabelText(option="Favor", stance="in favor of", name="in favor", answer="positive"),
    "against": LabelText(option="Against", stance="against", name="against", answer="negative"),
    "neutral": LabelText(option="Neutral", stance="neutral towards", name="neutral", answer="neutral"),
    "none": LabelText(option="None", stance="neutral towards", name="neutral", answer="neutral"),
}


def label_text_of(label: str, given: Mapping[str, LabelText]) -> LabelWords:
    """A label's words: the scenario's `label_text`, over the defaults, over the label itself."""
    base = DEFAULT_LABEL_TEXT.get(label, LabelText())
    mine = given.get(label, LabelText())
    merged = {**base.model_dump(exclude_none=True), **mine.model_dump(exclude_none=True)}
    return LabelWords(**{"option": label.capitalize(), "stance": label, "name": label, "answer": label, **merged})


class DomainRole(Strict):
    """Which domain specialist analyses a target: the item's own role (a dataset's `columns.role` or
    `target_roles`, `--input role=`), else `targets` (case-insensitive), else `default`."""

    default: str = "domain specialist in the field of $target"
    """The role when the target is not listed; `$target` is replaced (moot's fallback; the authors'
    code falls back to `expert`)."""
    targets: dict[str, str] = dict(SEMEVAL_ROLES)
    """A role per target, matched case-insensitively; replaces the built-in map, which is the
    authors' for the SemEval-2016 targets (e.g. `Hillary Clinton: political scientist`)."""

    def for_target(self, target: str) -> str:
        by_lower = {k.strip().lower(): v for k, v in self.targets.items()}
        chosen = by_lower.get(target.strip().lower(), self.default)
        return Template(chosen).safe_substitute(target=target)


class Judger(Strict):
    """How the judger answers."""

    output: Literal["option", "json"] = "option"
    """`option`: the paper's main-results judger, one option letter as text (Tables 2-5); `json`:
    the explainability variant, structured `{stance, explanation}` with its own prompt."""


class ColaInputs(Strict):
    """The item of a single run (no `--dataset`); `--input KEY=VALUE` overrides each key."""

    text: Optional[str] = None
    target: Optional[str] = None
    role: Optional[str] = None


class ColaScenario(LabelledScenario):
    """Stance detection (Lan et al.): three analysts (a linguist, a domain specialist and a social
    media veteran) read the text independently, one debater per label argues from their analyses,
    and the judger picks the stance. The ablations of the paper's Table 5 are plain data
    (`experts`, `debate`)."""

    PROTOCOL = "cola"
    PLACEHOLDERS = TEMPLATE_FIELDS

    protocol: Literal["cola"]
    title: str = "COLA stance detection"
    """Shown in transcripts and reports."""
    input: ColaInputs = ColaInputs()
    labels: Labels = list(DEFAULT_LABELS)
    """The closed label set; one debater per label, in this order."""
    options: Optional[list[Label]] = None
    """The judger's option order (A, B, C, ...); the same labels as `labels`. Null: the paper's
    order (against, favor, neutral) for those labels, else `labels`."""
    label_text: dict[str, LabelText] = {}
    """How a label reads; keys must be labels. Unset parts use built-ins for
    favor/against/neutral/none, else the label."""
    aliases: dict[str, str] = {}
    """Other answers that map onto a label (e.g. `pro: favor`); a reply that maps to none is
    `unparsed`."""
    metric: Optional[Literal["f_avg", "macro_f1", "accuracy"]] = None
    """The headline metric of a dataset run; null: `f_avg` (mean F1 of favor and against) when the
    labels are among favor/against/none, else `macro_f1`. `f_avg` needs favor and against."""
    max_unparsed: MaxUnparsed = MAX_UNPARSED
    experts: list[Expert] = list(EXPERTS)
    """The analysts of the analysis stage; `[]` is the without-analysis ablation."""
    debate: bool = True
    """`false` is the without-debate ablation: the judger decides from the analyses."""
    baseline: Optional[Literal["direct", "cot"]] = None
    """A Table 2 baseline instead of COLA: the judger alone (needs `experts: []`, `debate: false`)
    answers from the text with the direct (`direct`) or chain-of-thought (`cot`) prompt."""
    domain_role: DomainRole = DomainRole()
    judger: Judger = Judger()
    choice: ChoiceSetting = "auto"
    """How the judger's option letter is read: `likelihood` (the model's probability of each letter
    after the prompt; a backend without log-probabilities falls back to `structured`),
    `structured` (constrained `{"answer": letter}`), `text` (the paper's: the reply, parsed);
    `auto`: likelihood on the embedded model, else text. The JSON judger and the chain-of-thought
    baseline always answer as their prompts ask (on a base model: their label by likelihood after
    their explanation or reasoning)."""
    calibration: CalibrationSetting = "auto"
    """How a likelihood answer is calibrated: `contextual` (Zhao et al. 2021: each option's
    probability divided by the one the same prompt gives when the post is "N/A", "[MASK]" or
    empty, the analyses and arguments kept; every answer records raw, content-free and
    calibrated probabilities), `none`; `auto`: contextual on the embedded model."""
    models: dict[str, str] = {"default": "local"}
    """Which model plays whom. Keys: `default`, `linguist`, `domain`, `social`, `debaters` (every
    debater), `debater_<label>`, `judger` (also the one model of a baseline). Precedence: the
    role, then `debaters` for a debater, then `default`."""
    turn_tokens: TurnTokens = 48
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
        if self.baseline and (self.experts or self.debate):
            raise fail("a baseline is the judger alone: set experts: [] and debate: false", "baseline")
        if self.baseline and self.judger.output == "json":
            raise fail("a baseline answers in text: use judger: {output: option}", "baseline")
        return self

    @property
    def option_order(self) -> tuple[str, ...]:
        if self.options:
            return tuple(self.options)
        return PAPER_OPTIONS if set(self.labels) == set(PAPER_OPTIONS) else tuple(self.labels)

    def text_of(self, label: str) -> LabelWords:
        known = self.label_texts.get(label)
        return known if known is not None else label_text_of(label, self.label_text)

    @cached_property
    def label_texts(self) -> dict[str, LabelWords]:
        """Every label's words, merged once (a scenario is frozen; each item's prompts ask often)."""
        return {label: label_text_of(label, self.label_text) for label in self.labels}

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
