"""What a model call costs: a price per model, in US dollars per million prompt and completion
tokens, and the share of it a provider's batch API charges (OpenAI's and Anthropic's: half).

Prices come from three places, the first that names a model winning: `--price PROMPT COMPLETION`
(every model of the run), a price file (`--prices FILE`), the scenario's `backends.NAME.prices`
(by model name). A price file maps model specs to prices:

    openai:gpt-4o-mini: {prompt: 0.15, completion: 0.60}
    openai:gpt-4o: {prompt: 2.50, completion: 10.00, batch: 0.5}

A key that is not a model spec, a negative price or a missing field is one line naming the file,
line and key (PriceFileError, exit 2). A model that runs in this process (the embedded model, the
scripted one) costs nothing unless priced; a model served elsewhere without a price has no cost
(None), which a cost limit refuses before the run starts (moot.models.budget).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

from pydantic import ValidationError

from moot.models.price import Price
from moot.models.provider import BackendOptions, in_process
from moot.models.spec import parse_spec, provider_of
from moot.safety.yamlsource import SourceError, read_yaml

class PriceFileError(SourceError):
    """A price file with a key that is not a model, a negative price or a missing field: one line
    naming the file, line and key (exit 2)."""


def read_price_file(path: str | Path) -> dict[str, Price]:
    """The prices of a price file, by model spec (module docstring)."""
    source = read_yaml(path)
    if not isinstance(source.data, dict):
        raise PriceFileError(source.file, "expected a mapping of model specs to {prompt, completion} prices",
                             line=source.line_of(()))
    prices = {}
    for key, value in source.data.items():
        try:
            spec = str(parse_spec(str(key)))
        except ValueError as exc:
            raise PriceFileError(source.file, f"not a known model: {exc}", (key,), source.line_of((key,))) from None
        try:
            prices[spec] = Price.model_validate(value)
        except ValidationError as exc:
            raise price_error(source.file, key, exc, source.line_of) from None
    return prices


def price_error(file: str, key: Any, exc: ValidationError, line_of: Any) -> PriceFileError:
    """The first problem of a price, worded for a user."""
    err = exc.errors()[0]
    where = (key, *err["loc"])
    message = {"missing": "required key is missing", "extra_forbidden": "unknown key (prompt, completion, batch)",
               "model_type": "expected {prompt: N, completion: N}"}.get(err["type"], err["msg"])
    if err["type"] == "greater_than_equal":
        message = f"a price cannot be negative, got {err.get('input')}"
    return PriceFileError(file, message, where, line_of(where))


@dataclass(frozen=True)
class Prices:
    """The prices a run uses: `every` (--price) for any model, else the price file's, else the
    scenario's backends block's (module docstring)."""

    every: Optional[Price] = None
    by_spec: Mapping[str, Price] = field(default_factory=dict)

    def of(self, spec: str, options: BackendOptions) -> Optional[Price]:
        """The price of `spec`; zero for an unpriced in-process model; None: unknown."""
        if self.every is not None:
            return self.every
        parsed = parse_spec(spec)
        found = self.by_spec.get(str(parsed))
        if found is not None:
            return found
        provider = provider_of(parsed)
        given = getattr(options.of(provider), "prices", {}).get(parsed.model or "")
        if isinstance(given, Price):
            return given
        return FREE if provider.endpoints is in_process else None


FREE = Price(prompt=0, completion=0)


def prices_of(price: Optional[tuple[float, float]], file: Optional[str | Path]) -> Prices:
    """The command line's prices: `--price PROMPT COMPLETION` and `--prices FILE`."""
    every = None
    if price is not None:
        if min(price) < 0:
            from moot.errors import UsageError

            raise UsageError(f"--price {price[0]:g} {price[1]:g}: a price cannot be negative")
        every = Price(prompt=price[0], completion=price[1])
    return Prices(every, read_price_file(file) if file is not None else {})
