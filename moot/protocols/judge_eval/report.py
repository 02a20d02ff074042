"""judge-eval in a report: the paper's tables (Heller et al. Tables 1-4)."""

from __future__ import annotations

from moot.contract.report import TableCells
from moot.kit import RunMeta, RunResults

TABLE = ("Judge evaluation on {dataset} ({task}): accuracy, precision, recall and F1, macro averaged "
         "(cf. Heller et al. Tables 1, 3, 4)")
CLASSES = "Judge evaluation on {dataset} ({task}): class-wise F1 (cf. Heller et al. Table 2)"


def task_of(meta: RunMeta) -> str:
    """The task run.json records (folders of earlier versions: in the scenario)."""
    return str(meta.extra("task") or meta.scenario_fields.get("task") or "?")


def variant(meta: RunMeta) -> str:
    """A run's row name in the report: `judge-eval TASK`."""
    return f"judge-eval {task_of(meta)}"


def table_cells(run: RunResults) -> list[TableCells]:
    """Per dataset and task: accuracy and macro P/R/F1 side by side; and class-wise F1."""
    overall, task, dataset = run.report(), task_of(run.record), run.dataset
    key = f"{dataset} ({task})"
    metrics = {"accuracy": "accuracy", "precision": "macro_precision", "recall": "macro_recall", "F1": "macro_f1"}
    return [TableCells(f"judge: {key}", "judge", TABLE.format(dataset=dataset, task=task),
                       {"accuracy": overall.accuracy, "precision": overall.macro_precision,
                        "recall": overall.macro_recall, "F1": overall.macro_f1},
                       intervals={column: run.interval(metric) for column, metric in metrics.items()}),
            TableCells(f"judge_classes: {key}", "judge_classes", CLASSES.format(dataset=dataset, task=task),
                       dict(overall.per_class_f1),
                       intervals={label: run.interval(f"f1:{label}") for label in overall.per_class_f1})]
