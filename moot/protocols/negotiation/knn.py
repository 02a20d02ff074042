"""Demonstrations: the k nearest training items, by offline TF-IDF cosine over word tokens (no downloads)."""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from typing import Sequence

from moot.kit import iter_items, load_dataset_spec
from moot.protocols.negotiation.schema import NegotiationScenario

_TOKEN = re.compile(r"[a-z0-9']+")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class NearestNeighbours:
    """Index of texts; `query(text, k)` returns indexes of the k most similar (ties: lower index)."""

    def __init__(self, texts: Sequence[str]):
        docs = [Counter(tokens(t)) for t in texts]
        df = Counter(word for doc in docs for word in doc)
        n = len(docs)
        self.idf = {w: math.log((1 + n) / (1 + c)) + 1 for w, c in df.items()}
        self.vectors = [self._vector(doc) for doc in docs]

    def _vector(self, counts: Counter[str]) -> dict[str, float]:
        vec = {w: c * self.idf.get(w, 0.0) for w, c in counts.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        return {w: v / norm for w, v in vec.items()}

    def query(self, text: str, k: int) -> list[int]:
        q = self._vector(Counter(tokens(text)))
        scores = [(-sum(q.get(w, 0.0) * v for w, v in vec.items()), i) for i, vec in enumerate(self.vectors)]
        return [i for _, i in sorted(scores)[:k]]


@lru_cache(maxsize=8)
def _train(path: str) -> tuple[list[tuple[str, str]], NearestNeighbours]:
    rows = [(i.text, i.label) for i in iter_items(load_dataset_spec(path)) if i.label]
    return rows, NearestNeighbours([t for t, _ in rows])


def neighbours(s: NegotiationScenario, text: str) -> list[tuple[str, str]]:
    """The k nearest training items (text, label); `prepare` made the train path absolute."""
    if not s.demonstrations.train or not s.demonstrations.k:
        return []
    rows, index = _train(s.demonstrations.train)
    return [rows[i] for i in index.query(text, s.demonstrations.k)]
