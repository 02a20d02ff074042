"""Building blocks every protocol's scenario shares: strict models, generation, retries, backends.

They live apart from the conference schema so the per-item protocols (COLA, S2MAD, negotiation)
reuse them without reaching into its private helpers.
"""

from __future__ import annotations

from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, Annotated, Any, Callable, ClassVar, Iterable, Literal, Mapping, Optional, Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from moot.models.providers import Backends as Backends  # every protocol's `backends:` block
from moot.models.spec import parse_spec, provider_of
from moot.errors import closest
from moot.plugins import declare_builtin


class Strict(BaseModel):
    """A strict block of a scenario: unknown keys are errors; each key's docstring (below it) is
    its meaning in the JSON Schema and docs/scenarios.md (read there: moot.scenario.keydocs)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Generation(Strict):
    """Sampling settings sent with every model call (max_tokens is always bounded)."""

    temperature: Annotated[float, Field(ge=0, le=2)] = 0.7
    """Sampling temperature."""
    max_tokens: Annotated[int, Field(ge=1, le=8192)] = 256
    """Most tokens a reply may have; every call is bounded."""
    seed: Optional[int] = 0
    """Sampling seed, for backends that honour one (local, Ollama, OpenAI best-effort)."""
    top_p: Optional[Annotated[float, Field(gt=0, le=1)]] = None
    """Nucleus sampling; null leaves the backend's default."""
    repeat_penalty: Optional[Annotated[float, Field(ge=1, le=2)]] = 1.25
    """Penalty on repeated tokens (local and Ollama; OpenAI has none). Small models loop without it."""


ChoiceSetting = Literal["auto", "likelihood", "structured", "text"]
CHOICE_METHODS = ("likelihood", "structured", "text")
CalibrationSetting = Literal["auto", "contextual", "none"]


def choice_method(setting: str, spec: str, default: str, base: bool = False) -> str:
    """How a role's closed answer is read: the scenario's `choice`, or for `auto` likelihood on the
    embedded model and on any base model (`base`: a server's declared `kind: base`), and the
    protocol's own way (`default`, the paper's) on the others."""
    if setting in CHOICE_METHODS:
        return setting
    return "likelihood" if base or provider_of(spec).local else default


class Retry(Strict):
    """Bounded retries for failed model calls (errors, timeouts, empty replies)."""

    attempts: Annotated[int, Field(ge=1, le=10)] = 3
    """Attempts per model call; after the last, the run stops as failed and can be resumed."""
    backoff_s: Annotated[float, Field(ge=0, le=60)] = 1.0
    """Wait before the second attempt; it doubles for each further one."""
    timeout_s: Annotated[float, Field(gt=0, le=3600)] = 300.0
    """Longest wait for one reply."""


def fail(message: str, *key: object) -> ValueError:
    """A cross-field problem marked with its key path, so the error names the right line."""
    return ValueError(f"@{'.'.join(map(str, key))}@ {message}")


def unknown(what: str, given: object, allowed: Sequence[str], sigil: str = "") -> str:
    """`unknown role (did you mean 'judge'?)` when an allowed name is close, else the allowed list
    (`sigil`: what the names are written with, e.g. `$` for placeholders, left out when comparing)."""
    match = closest(str(given), allowed)
    if match:
        return f"unknown {what} (did you mean {sigil + match!r}?)"
    return f"unknown {what} (allowed: {', '.join(sigil + name for name in allowed)})"


def check_spec(spec: str, *key: object) -> None:
    try:
        parse_spec(spec)
    except ValueError as exc:
        raise fail(str(exc), *key) from None


def check_template(template: str, fields: frozenset[str], *key: object) -> None:
    """A prompt template may use only the placeholders its role is given."""
    extra = sorted(set(Template(template).get_identifiers()) - fields)
    if extra:
        raise fail(unknown(f"placeholder ${extra[0]}", extra[0], sorted(fields), sigil="$"), *key)
    if not Template(template).is_valid():
        raise fail("malformed $placeholder", *key)


class ScenarioBase(Strict):
    """What the engine asks of every protocol's scenario (moot.contract.protocol checks these exist).

    Roles are the names that take a model (a conference's agents; COLA's analysts, debaters and
    judger; ...). A role's model is named, most specific first, by the keys `model_keys(role)`
    gives, then `default`; `--model KEY=SPEC` may use any of those keys."""

    PROTOCOL: ClassVar[str]
    PLACEHOLDERS: ClassVar[frozenset[str]] = frozenset()  # the $fields its prompt templates may use

    if TYPE_CHECKING:  # every protocol's scenario declares these, in its own field order and with its
        # own defaults (a pydantic field here would come first); moot.contract.check checks they exist
        models: dict[str, str]
        generation: Generation
        retry: Retry
        backends: Backends

    @model_validator(mode="before")
    @classmethod
    def _partial_generation(cls, data: Any) -> Any:
        """`generation: {seed: 7}` changes the seed and keeps the protocol's own defaults for the
        rest (COLA's temperature 0, S2MAD's 0.2, ...), not the generic ones."""
        declared = cls.model_fields.get("generation")
        given = data.get("generation") if isinstance(data, dict) else None
        if declared is not None and isinstance(declared.default, BaseModel) and isinstance(given, dict):
            data = {**data, "generation": {**declared.default.model_dump(), **given}}
        return data

    def roles(self) -> list[str]:
        raise NotImplementedError

    def model_keys(self, role: str) -> tuple[str, ...]:
        return (role,)

    def model_for(self, role: str) -> str:
        models = self.models
        return next((models[k] for k in self.model_keys(role) if k in models), models.get("default", "local"))

    def generation_for(self, role: str) -> Generation:
        return self.generation

    def templates(self) -> dict[str, str]:
        return {**shipped_templates(self.PROTOCOL), **getattr(self, "prompts", {})}

    def resolve_paths(self, base: Path) -> "ScenarioBase":
        """The scenario with file paths it names taken relative to `base` (its file's folder)."""
        return self

    def check_models(self, resolved: Mapping[str, str]) -> None:
        """A protocol's rule on the models finally chosen (e.g. negotiation: two different LLMs)."""

    def label_set(self) -> list[str]:
        """The closed label set each unit's prediction is one of; empty: units predict no label (a
        conference, ChatEval's scores), so no accuracy or F1 is computed."""
        return []

    def declared_metric(self) -> Optional[str]:
        """The file's `metric:`; None: not given (the dataset's or the protocol's default then)."""
        return None

    def headline_metric(self) -> Optional[str]:
        """The metric a run reports first: the declared one, else the protocol's default."""
        return self.declared_metric()

    def unparsed_limit(self) -> Optional[float]:
        """The largest share of unparsed answers a run may end with and succeed (None: only a run
        whose every answer is unparsed fails; see moot.engine.unparsed)."""
        return None

    def input_fields(self) -> dict[str, Any]:
        """The one item given in the file (`input:`), for a run without a dataset."""
        given = getattr(self, "input", None)
        return given.model_dump(exclude_none=True) if given is not None else {}


TemplateLoader = Callable[[str], Mapping[str, str]]  # a protocol's name -> its shipped prompt templates
_loaders: list[TemplateLoader] = []


def use_shipped_templates(loader: TemplateLoader) -> None:
    """Read protocols' shipped templates with `loader`: the hook by which the protocols' registry
    (moot.protocols.registry) hands the templates of agents/prompts to the scenario layer below it."""
    _loaders[:] = [loader]


def shipped_templates(protocol: str) -> Mapping[str, str]:
    """The templates moot ships for `protocol`, keyed by template name."""
    if not _loaders:
        declare_builtin()  # moot's protocols' registry installs its loader as it is imported
    return _loaders[0](protocol)


def check_models(models: Mapping[str, str], allowed: Iterable[str], what: str = "role") -> None:
    allowed = tuple(allowed)
    for key, spec in models.items():
        if key not in allowed:
            raise fail(unknown(what, key, allowed), "models", key)
        check_spec(spec, "models", key)


def check_prompts(prompts: Mapping[str, str], protocol: str, fields: frozenset[str]) -> None:
    templates = shipped_templates(protocol)
    for key, text in prompts.items():
        if key not in templates:
            raise fail(unknown("prompt", key, sorted(templates)), "prompts", key)
        check_template(text, fields, "prompts", key)
