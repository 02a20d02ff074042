"""A model's price: US dollars per million prompt and completion tokens, and the share of it a
provider's batch API charges (moot.models.prices says where prices come from)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

PER = 1_000_000  # prices are per million tokens


class Price(BaseModel):
    """A model's price in US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: Annotated[float, Field(ge=0)]
    """Dollars per million prompt (input) tokens."""
    completion: Annotated[float, Field(ge=0)]
    """Dollars per million completion (output) tokens."""
    batch: Annotated[float, Field(gt=0, le=1)] = 0.5
    """The share of these prices a batch API charges (0.5: half price)."""

    def cost(self, prompt_tokens: float, completion_tokens: float, batch: bool = False) -> float:
        """Dollars for these tokens, at the batch rate when `batch`."""
        share = self.batch if batch else 1.0
        return share * (prompt_tokens * self.prompt + completion_tokens * self.completion) / PER
