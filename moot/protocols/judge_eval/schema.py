"""judge-eval's scenario: a conference scenario's judge as a classifier for one task, never read from YAML."""

from __future__ import annotations

from typing import Annotated, Literal, Optional, Sequence

from pydantic import Field

from moot.agents.prompts import default_templates
from moot.kit import Backends, Generation, Retry, ScenarioBase
from moot.protocols.conference.schema import Scenario

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
