"""Metric sets the labelled-item protocols declare (moot.contract.metrics), and the answers per round
that deliberating ones record (their `rounds` hook: moot.contract.protocol)."""

from __future__ import annotations

from typing import Optional

from moot.contract.metrics import LABELLED, MetricSet, with_sets
from moot.kit import UNPARSED, ResultRow

# Zhang et al. (S2MAD) Table 1: binary rumour detection by accuracy, macro-F1, and the F1 of the
# rumour (RF1) and non-rumour (NF1) classes; it applies to runs whose two labels are those classes
# (fake / real, rumor / non-rumor, false / true: moot.metrics.classification.RUMOR_CLASSES).
RUMOUR = MetricSet("rumor", "Rumor detection (S2MAD Table 1): accuracy, macro-F1, RF1, NF1",
                   (("accuracy", "acc"), ("macro_f1", "macro-F1"), ("rf1", "RF1"), ("nf1", "NF1")), classes=2)

RUMOUR_METRICS = with_sets(LABELLED, RUMOUR)  # protocols that run on rumour data (S2MAD, debate)


def answers_of(row: ResultRow) -> Optional[list[list[Optional[str]]]]:
    """Each round's answers as its results row records them (`answers`); unparsed is None."""
    found = row.extra("answers")
    if not isinstance(found, list) or not all(isinstance(r, list) for r in found):
        return None
    return [[None if a in (None, UNPARSED) else str(a) for a in r] for r in found]
