"""A run whose answers are all unparsed is not a success.

An item whose answer cannot be read is recorded as `unparsed` (never guessed), and the metrics
count it as wrong. A run where every item ended so measured nothing, and one where more than the
scenario's `max_unparsed` share did measured too little: either ends with one line saying so and
its own exit code (EXIT_UNPARSED), after its results are written like any other run's.
`max_unparsed: 1` accepts any run (a test of something else than the answers).
"""

from __future__ import annotations

from typing import Iterable, Optional

from moot.errors import EXIT_UNPARSED
from moot.metrics.classification import UNPARSED
from moot.saved.records import ResultRow

__all__ = ["EXIT_UNPARSED", "unparsed_failure"]


def unparsed_failure(rows: Iterable[ResultRow], max_unparsed: Optional[float] = None) -> Optional[str]:
    """Why the run's answers fail it (None: they do not): a larger share of its completed items
    unparsed than `max_unparsed` (0..1; None: every one of them)."""
    answered = [r.prediction for r in rows if r.status == "completed" and r.prediction]
    unparsed = sum(1 for p in answered if p == UNPARSED)
    if not unparsed:
        return None
    share = unparsed / len(answered)
    if max_unparsed is None and unparsed == len(answered):
        return f"every answer is unparsed ({unparsed} of {len(answered)}): the run measured nothing"
    if max_unparsed is not None and share > max_unparsed:
        return f"{unparsed} of {len(answered)} answers unparsed ({share:.0%}), more than max_unparsed {max_unparsed:g}"
    return None
