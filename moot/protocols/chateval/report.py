"""ChatEval in a report: accuracy and Cohen's kappa against human labels (cf. ChatEval Table 1)."""

from __future__ import annotations

from typing import Optional, Sequence

from moot.contract.report import TableCells
from moot.kit import UNPARSED, RunMeta, RunResults, cohen_kappa as kappa_of_labels, gold_and_predictions

TABLE = ("Pairwise preference against human labels (cf. ChatEval Table 1): accuracy and Cohen's kappa; an "
         "unparsed prediction counts as wrong and as a category of its own")


def cohen_kappa(gold: Sequence[str], pred: Sequence[Optional[str]]) -> float:
    """Unweighted Cohen's kappa between two labelings (sklearn's `cohen_kappa_score(gold, pred)`:
    the categories are every label either side uses, `unparsed` one of them); nan when undefined."""
    if len(gold) != len(pred) or not gold:
        raise ValueError("kappa needs two labelings of the same items, at least one")
    return kappa_of_labels(gold, [p if p is not None else UNPARSED for p in pred])


def variant(meta: RunMeta) -> str:
    """A run's row name: `ChatEval one_by_one, 2 referees x 2 turns, both orders`."""
    s = meta.scenario_fields
    referees = s.get("referees")
    count = len(referees) if isinstance(referees, list) else "?"
    return f"ChatEval {s.get('strategy', '?')}, {count} referees x {s.get('turns', '?')} turns, " \
           f"{s.get('positions', '?')} order(s)"


def table_cells(run: RunResults) -> list[TableCells]:
    gold, pred = gold_and_predictions(run.scored)
    accuracy = f"{run.dataset} (accuracy)"
    return [TableCells("chateval", "chateval", TABLE, {accuracy: run.report().accuracy,
                                                        f"{run.dataset} (kappa)": cohen_kappa(gold, pred)},
                       intervals={accuracy: run.interval("accuracy")})]
