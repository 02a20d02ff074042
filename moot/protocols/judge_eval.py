"""The decision-conference judge alone as a zero-shot classifier (Heller et al. 2025, §4.1, §5.1).

The paper evaluates the judge's model on stance detection (VAST: pro / con / neutral; IBM Claim
Stance: pro / con) and stance-polarity detection (IBM Claim Stance: positive / negative /
neutral) before using it to detect agreement. Here the judge of a conference scenario (its name,
persona and model) gets one item at a time: a system prompt as the judge and one question, and
answers {label, explanation} as structured output whose `label` is a Literal of the label set
(llama.cpp grammars / OpenAI json_schema constrain it). A reply that maps onto no label is
`unparsed`. Items run through the per-item batch machinery (moot.protocols.batch): resumable,
cached, concurrent. The prompt texts are in agents/prompts/judge_eval.yaml.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from functools import lru_cache
from typing import Annotated, Literal, Optional, Sequence

from autogen_core.models import LLMMessage, SystemMessage, UserMessage
from pydantic import BaseModel, Field, create_model

from moot.agents.prompts import default_templates, render
from moot.contract.commands import DatasetCommand, Prepared
from moot.contract.protocol import InputField, Outcome, Protocol, Rescore, Rescored
from moot.contract.report import Reporting, TableCells
from moot.protocols.conference.schema import Scenario
from moot.protocols.items.labels import LabelSet
from moot.kit import (
    ANY_STAGE, Backends, Generation, Retry, RunMeta, RunResults, ScenarioBase, UnitContext, expected, find_scenario,
    last_call,
    load_scenario, resend,
)

NAME = "judge_eval"
JUDGE = "judge"
TASKS = ("stance", "polarity")
# Label sets in the paper's table order (pro, con, neutral; positive, negative, neutral).
TASK_LABELS = {"stance": ("favor", "against", "neutral", "none"), "polarity": ("positive", "negative", "neutral")}


class JudgeEvalScenario(ScenarioBase):
    """What judge-eval runs: built from a conference scenario's judge, never read from YAML."""

    protocol: Literal["judge_eval"] = "judge_eval"
    title: str = "judge-eval"
    task: Literal["stance", "polarity"]
    labels: Annotated[list[str], Field(min_length=2)]
    judge_name: str = "Judge"
    judge_persona: str = ""
    system_prompt: Optional[str] = None  # the scenario judge's own `prompt:`, if any
    models: dict[str, str] = {"default": "local"}
    generation: Generation = Generation(temperature=0.0, max_tokens=160)
    retry: Retry = Retry()
    backends: Backends = Backends()

    PROTOCOL = "judge_eval"

    def label_set(self) -> list[str]:
        return list(self.labels)

    def headline_metric(self) -> str:
        return "macro_f1"

    def roles(self) -> list[str]:
        return [JUDGE]

    def templates(self) -> dict[str, str]:
        found = dict(default_templates("judge_eval"))
        if self.system_prompt:
            found["system"] = self.system_prompt
        return found


def labels_for(task: str, dataset_labels: Sequence[str]) -> list[str]:
    """The classifier's labels: polarity always positive/negative/neutral; stance the dataset's
    labels (favor, against and neutral or none), in the paper's order."""
    known = TASK_LABELS[task]
    unknown = sorted(set(dataset_labels) - set(known))
    if unknown:
        raise ValueError(f"task {task}: dataset labels {unknown} are not among {', '.join(known)}; "
                         f"map them under `labels:` in the dataset file")
    if task == "polarity":
        return list(known)
    return [lab for lab in known if lab in set(dataset_labels) or lab in ("favor", "against")]


def from_conference(conference: Scenario, task: Literal["stance", "polarity"], labels: Sequence[str], model: Optional[str] = None,
                    temperature: Optional[float] = 0.0) -> JudgeEvalScenario:
    """The judge of `conference` (default agent name Judge if it has none) as a classifier."""
    if not isinstance(conference, Scenario):
        raise ValueError("--scenario must be a decision-conference scenario (protocol: conference)")
    judge = conference.judge
    spec = model or (conference.model_for(judge.name) if judge else conference.models.get("default", "local"))
    generation = conference.generation_for(judge.name) if judge else conference.generation
    if temperature is not None:
        generation = generation.model_copy(update={"temperature": temperature})
    return JudgeEvalScenario(task=task, labels=list(labels), judge_name=judge.name if judge else "Judge",
                             judge_persona=judge.persona if judge else "",
                             system_prompt=judge.prompt if judge else None, models={"default": spec},
                             generation=generation, retry=conference.retry, backends=conference.backends,
                             title=f"judge-eval ({task}): {conference.title}")


@lru_cache(maxsize=None)
def label_model(labels: tuple[str, ...]) -> type[BaseModel]:
    """{label: one of labels, explanation: short text}; label first (scripted models rely on it)."""
    return create_model("JudgeLabel", label=(Literal[labels], ...),  # type: ignore[arg-type]  # a Literal made at run time
                        explanation=(Annotated[str, Field(max_length=200)], ...))


def label_set(s: JudgeEvalScenario) -> LabelSet:
    aliases = {"pro": "favor", "con": "against"} if s.task == "stance" else {}
    return LabelSet(tuple(s.labels), tuple(s.labels), {}, aliases)


def identity(s: JudgeEvalScenario) -> dict[str, object]:
    """Run-directory identity beyond the scenario/dataset hashes: task, labels and prompt texts."""
    prompts = json.dumps(s.templates(), sort_keys=True).encode("utf-8")
    return {"protocol": NAME, "task": s.task, "labels": list(s.labels),
            "prompts_sha256": hashlib.sha256(prompts).hexdigest(),
            "generation": s.generation.model_dump(mode="json")}


async def run(s: JudgeEvalScenario, ctx: UnitContext) -> Outcome:
    """One item: the judge's label for it."""
    templates = s.templates()
    text, target = ctx.inputs["text"], ctx.inputs.get("target")
    if s.task == "stance" and not target:
        raise ValueError("stance needs a target: use a dataset with a target column")
    fields = {"name": s.judge_name, "persona": s.judge_persona, "text": text,
              "target": target or "the topic it discusses", "choices": ", ".join(s.labels),
              "labels": " or ".join(json.dumps(lab) for lab in s.labels)}
    messages: list[LLMMessage] = [SystemMessage(content=render(templates["system"], fields)),
                UserMessage(content=render(templates[s.task], fields), source="user")]
    labels = label_set(s)
    reply = await ctx.call(JUDGE, messages, label_model(tuple(s.labels)), stage=s.task,
                           decide=lambda reply: labels.map(reply)[0])
    prediction, explanation = labels.map(reply.text)
    return Outcome(prediction, explanation, reply.text, decided_by=JUDGE)


async def rescore(s: JudgeEvalScenario, job: Rescore, ctx: UnitContext) -> Rescored:
    """The judge's recorded question sent to another model."""
    call = last_call(job.transcript, JUDGE)
    if call is None:
        raise ValueError("the transcript has no judge call to send again")
    labels = label_set(s)
    reply = await resend(ctx, call, label_model(tuple(s.labels)), decide=lambda text: labels.map(text)[0])
    prediction, explanation = labels.map(reply.text)
    return Rescored(Outcome(prediction, explanation, reply.text, decided_by=JUDGE))


# --- in a report: the paper's tables (Heller et al. Tables 1-4) --------------------------------
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


# --- `moot judge-eval DATA.yaml --task stance|polarity` -----------------------------------------
def command_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", choices=TASKS, required=True,
                   help="stance (favor/against[/neutral]) or polarity (positive/negative/neutral)")
    p.add_argument("--scenario", default="drug_policy",
                   help="conference scenario whose judge is evaluated (file or bundled name; default drug_policy)")
    p.add_argument("--temperature", type=float, default=0.0,
                   help="sampling temperature of the judge here (default 0.0: a deterministic classifier)")


def prepare(args: argparse.Namespace, dataset_labels: Sequence[str]) -> Prepared:
    """The judge of the `--scenario` conference as a classifier for `--task` on the dataset's labels."""
    path = find_scenario(args.scenario)
    labels = labels_for(args.task, dataset_labels)
    scenario = from_conference(load_scenario(path), args.task, labels, None, args.temperature)
    return Prepared(scenario, path, f"judge-eval-{args.task}-{args.dataset.stem}", identity(scenario))


COMMAND = DatasetCommand(
    name="judge-eval",
    help="the conference judge alone as a zero-shot stance/polarity classifier on a dataset",
    description=("The conference judge alone as a classifier (Heller et al. 2025 §4.1 / §5.1, Tables 1-4): "
                 "the judge of a conference scenario (its name, persona, model and generation settings) "
                 "answers zero-shot stance (favor / against [/ neutral]) or stance-polarity (positive / "
                 "negative / neutral) questions on a dataset, as a resumable, cached, concurrent dataset "
                 "run; `moot report` puts it in the shape of the paper's tables."),
    options=command_options,
    prepare=prepare,
)


PROTOCOL = Protocol(
    name=NAME,
    title="The conference judge as a zero-shot classifier",
    paper="Heller et al. 2025, §4.1 / §5.1 (Tables 1-4)",
    scenario=JudgeEvalScenario,
    policy=lambda spoken: None if spoken else JUDGE,  # one turn: the judge's
    run=run,
    inputs=(InputField("text", "text"), InputField("target", "target", required=False)),
    result_name="label",
    deciders=(JUDGE,),
    rescore=rescore,
    report=Reporting(variant=variant, tables=table_cells),
    commands=(COMMAND,),
    calls=lambda s: 1.0,  # one structured call per item
    scripted=lambda s: {ANY_STAGE: expected()},  # one closed question: the scripted model's own rule answers it
)
