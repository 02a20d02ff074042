"""What a protocol's question expects as an answer, told to a model that plays along (the scripted one).

A protocol declares, per stage of its calls (moot.contract.protocol's `scripted`), what a scripted
answer looks like, so the scripted model can play every protocol without knowing any:

- a free turn: `template`, a short text its parser accepts, whose `{name}` fields each take one
  of `choices[name]` (e.g. "... Answer: {label}" with the scenario's labels);
- a closed answer (a choice, a score, a structured output's label field): the question itself
  lists its options, and the scripted model's own rule answers it (moot.models.backends.scripted.client); a
  protocol whose questions are all closed declares an empty `template`.

Which option a free turn's field takes is deterministic given the model's seed and the prompt (a
hash of both), and differs across seeds, so scripted repeats have variance. The expectation rides in
`extra_create_args[EXPECTED_ARG]` to clients that say `plays_along`; no other backend sees it,
and it is not part of a call's cache key (the stage and the scenario, which fix it, are).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence, TypeVar

EXPECTED_ARG = "moot_expected"
ANY_STAGE = "*"  # a declaration's key for the stages it does not name
T = TypeVar("T")


@dataclass(frozen=True)
class Expected:
    """A question's answer form (see the module docstring)."""

    template: str = ""
    choices: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(field, its options) for each `{field}` of the template."""

    def as_dict(self) -> dict[str, Any]:
        return {"template": self.template, "choices": [[name, list(options)] for name, options in self.choices]}

    def filled(self, seed: object, prompt: str, given: Optional[str] = None) -> str:
        """The template with each field's option: `given` (a test's marked label) when it is one of
        them, else the one `seed` and `prompt` pick."""
        values = {name: given if given in options else picked(options, seed, prompt, name)
                  for name, options in self.choices}
        return self.template.format(**values)


def expected(template: str = "", **choices: Sequence[str]) -> Expected:
    """`Expected(template, choices)` written as keywords: `expected("Answer: {label}", label=labels)`."""
    return Expected(template, tuple((name, tuple(options)) for name, options in choices.items()))


def for_stage(declared: Mapping[str, Expected], stage: str) -> Optional[Expected]:
    """The declared answer form of `stage`: its own, else the declaration's for any stage."""
    return declared.get(stage) or declared.get(ANY_STAGE)


def expected_of(extra: Optional[Mapping[str, Any]]) -> Optional[Expected]:
    """The expectation an `extra_create_args` carries, if any."""
    data = (extra or {}).get(EXPECTED_ARG)
    if data is None:
        return None
    return Expected(str(data.get("template", "")),
                    tuple((str(name), tuple(map(str, options))) for name, options in data.get("choices", [])))


def picked(options: Sequence[T], seed: object, prompt: str, name: str = "") -> T:
    """One of `options`, fixed by the seed and the prompt (sha256: the same in every process)."""
    digest = hashlib.sha256(f"{seed}\x00{name}\x00{prompt}".encode("utf-8")).digest()
    return options[int.from_bytes(digest[:8], "big") % len(options)]
