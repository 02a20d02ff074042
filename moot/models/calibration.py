"""Contextual calibration of closed choices (Zhao et al. 2021, "Calibrate Before Use", ICML).

A choice read from a model's probabilities carries the model's prior over the options: a small
model prefers one option whatever the input (the embedded Gemma 3 270M answered `favor` on 46 of
48 stance posts with one prompt, `neutral` on 45 with another). Zhao et al. estimate that prior by
asking the same prompt with the input replaced by content-free strings ("N/A", "[MASK]", ""),
average the option probabilities they get (p_cf), and rescale each answer's probabilities by its
inverse: q = normalise(W p) with W = diag(p_cf)^-1 and b = 0. The answer is the most likely option
under q.

Everything here is arithmetic on recorded probabilities: an answer records its raw
probabilities, each content-free input's and the calibrated ones (moot.log.events.Measured), so a
saved run is re-calibrated (or the calibration undone) without a model call (`recalibrated`).
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

CONTENT_FREE = ("N/A", "[MASK]", "")
CONTEXTUAL = "contextual"
FLOOR = 1e-9  # a content-free probability below this is taken as this (the option is never divided by 0)


def content_free_prior(distributions: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """p_cf: the mean of the content-free inputs' option probabilities, normalised."""
    options = list(distributions[0])
    mean = {o: sum(d.get(o, 0.0) for d in distributions) / len(distributions) for o in options}
    return normalise(mean)


def calibrate(probabilities: Mapping[str, float], prior: Mapping[str, float]) -> dict[str, float]:
    """normalise(p / p_cf): each option's probability divided by its content-free probability."""
    return normalise({o: p / max(prior.get(o, 0.0), FLOOR) for o, p in probabilities.items()})


def normalise(weights: Mapping[str, float]) -> dict[str, float]:
    total = sum(weights.values())
    if total <= 0:
        return {o: 1.0 / len(weights) for o in weights}
    return {o: w / total for o, w in weights.items()}


def best(probabilities: Mapping[str, float]) -> str:
    """The most likely option (the first of equals, in the options' order)."""
    return max(probabilities, key=probabilities.get)


def recalibrated(probabilities: Mapping[str, float], content_free: Mapping[str, Mapping[str, float]]
                 ) -> Optional[dict[str, float]]:
    """The calibrated probabilities of a recorded answer, from its recorded raw and content-free
    probabilities alone (None when it recorded no content-free probabilities)."""
    if not content_free or not probabilities:
        return None
    return calibrate(probabilities, content_free_prior(list(content_free.values())))
