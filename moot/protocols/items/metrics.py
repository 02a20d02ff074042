"""Metric sets the labelled-item protocols declare (moot.contract.metrics)."""

from __future__ import annotations

from moot.contract.metrics import LABELLED, MetricSet, with_sets

# Zhang et al. (S2MAD) Table 1: binary rumour detection by accuracy, macro-F1, and the F1 of the
# rumour (RF1) and non-rumour (NF1) classes; it applies to runs whose two labels are those classes
# (fake / real, rumor / non-rumor, false / true: moot.metrics.classification.RUMOR_CLASSES).
RUMOUR = MetricSet("rumor", "Rumor detection (S2MAD Table 1): accuracy, macro-F1, RF1, NF1",
                   (("accuracy", "acc"), ("macro_f1", "macro-F1"), ("rf1", "RF1"), ("nf1", "NF1")), classes=2)

RUMOUR_METRICS = with_sets(LABELLED, RUMOUR)  # protocols that run on rumour data (S2MAD, debate)
