"""A cost limit (`--max-cost USD`): every call is priced, and none is sent that could take the
run's spend over the limit.

Before a call is sent its greatest cost is reserved: its prompt at one token per UTF-8 byte (no
tokenizer gives more) plus its token limit of completion, at the model's price
(moot.models.prices); the reply's usage then settles it at its real cost. A call whose reservation
does not fit what is left is not sent: it fails with BudgetExceeded, which stops the run
resumably, so the same command with a higher `--max-cost` continues it. The spend of earlier
invocations (run.json's `spend_usd`) counts against the limit; replies from the cache cost nothing.
"""

from __future__ import annotations

from typing import Optional, Sequence

from autogen_core.models import LLMMessage

from moot.models.bounded import DEFAULT_TOKEN_LIMIT
from moot.models.calls import FatalModelError
from moot.models.price import Price

MESSAGE_TOKENS = 8  # a chat template's tokens around each message, at the most


class BudgetExceeded(FatalModelError):
    """The next call could take the spend over --max-cost: the run stops, and continues with a higher limit."""

    resumes = True
    continues = "run it again with a higher --max-cost to continue"


def greatest_prompt(messages: Sequence[LLMMessage]) -> int:
    """Prompt tokens `messages` can take at the most."""
    return sum(len(str(m.content).encode("utf-8")) + MESSAGE_TOKENS for m in messages)


class Budget:
    """The run's spend against its limit (None: spend is counted, nothing is refused)."""

    def __init__(self, limit: Optional[float] = None, spent: float = 0.0):
        self.limit, self.spent, self.reserved = limit, spent, 0.0
        self.refused = False  # a call was refused: the run (an experiment: its grid) stops

    def reserve(self, price: Price, messages: Sequence[LLMMessage], max_tokens: Optional[int],
                batch: bool = False) -> float:
        """The call's greatest cost (at the batch rate when `batch`), held; BudgetExceeded when it
        does not fit."""
        bound = price.cost(greatest_prompt(messages), int(max_tokens or DEFAULT_TOKEN_LIMIT), batch)
        if self.limit is not None and self.spent + self.reserved + bound > self.limit:
            self.refused = True
            raise BudgetExceeded(f"the cost limit of ${self.limit:g} is reached: the next call could take the "
                                 "spend over it", 0)
        self.reserved += bound
        return bound

    def settle(self, held: float, cost: float) -> None:
        """A call ended: its reservation released, what it cost (0 when it failed) spent."""
        self.reserved -= held
        self.spent += cost
