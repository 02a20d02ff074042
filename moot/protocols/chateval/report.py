"""ChatEval in a report: accuracy and Cohen's kappa against human labels (cf. ChatEval Table 1)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Optional, Sequence

from moot.contract.report import TableCells
from moot.kit import UNPARSED, cohen_kappa as kappa_of_labels

if TYPE_CHECKING:
    from moot.report.runs import Run


TABLE = ("Pairwise preference against human labels (cf. ChatEval Table 1): accuracy and Cohen's kappa; an "
         "unparsed prediction counts as wrong and as a category of its own")


def cohen_kappa(gold: Sequence[str], pred: Sequence[Optional[str]]) -> float:
    """Unweighted Cohen's kappa between two labelings (sklearn's `cohen_kappa_score(gold, pred)`:
    the categories are every label either side uses, `unparsed` one of them); nan when undefined."""
    if len(gold) != len(pred) or not gold:
        raise ValueError("kappa needs two labelings of the same items, at least one")
    return kappa_of_labels(gold, [p if p is not None else UNPARSED for p in pred])


def variant(meta: Mapping[str, object]) -> str:
    """A run's row name: `ChatEval one_by_one, 2 referees x 2 turns, both orders`."""
    s = meta.get("scenario")
    s = s if isinstance(s, dict) else {}
    referees = s.get("referees")
    count = len(referees) if isinstance(referees, list) else "?"
    return f"ChatEval {s.get('strategy', '?')}, {count} referees x {s.get('turns', '?')} turns, " \
           f"{s.get('positions', '?')} order(s)"


def table_cells(run: Run) -> list[TableCells]:
    gold = [str(r["gold"]) for r in run.scored]
    pred = [r.get("prediction") for r in run.scored]
    accuracy = f"{run.dataset} (accuracy)"
    return [TableCells("chateval", "chateval", TABLE, {accuracy: run.report().accuracy,
                                                        f"{run.dataset} (kappa)": cohen_kappa(gold, pred)},
                       intervals={accuracy: run.interval("accuracy")})]
