"""ChatEval's scenario: its referees, its communication strategy, its task and prompts."""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from pydantic import Field, model_validator

from moot.kit import Backends, ChoiceSetting, Generation, Retry, Strict, check_models, check_prompts, fail
from moot.protocols.items.schema import MAX_UNPARSED, ItemScenario, MaxUnparsed, check_distinct
from moot.speaker_selection.chateval import SUMMARIZER, PanelPlan, Strategy


NAME = "chateval"
LO, HI = 1, 10  # the paper's scale
LABELS = ("a", "b", "tie")
Order = Literal["ab", "ba", "panel"]  # which answer is Assistant 1 (pairwise); `panel`: task scores
ORDERS: dict[str, tuple[Order, ...]] = {"both": ("ab", "ba"), "given": ("ab",), "swapped": ("ba",)}
FIELDS = frozenset({"question", "response_1", "response_2", "response", "history", "persona", "name", "final",
                    "summary", "new_lines", "speaker", "content", "assistant", "count", "cast", "turns", "round"})


# --- the scenario --------------------------------------------------------------------------------
class Referee(Strict):
    """One referee of the panel."""

    name: Annotated[str, Field(pattern=r"^[^\n:\[\]]{1,40}$")]
    """How the referee is called in the discussion (`[General Public]: ...`)."""
    persona: str
    """Its role description, put in its prompt as the code does (`You are now Critic, one of the referees ...`)."""
    describe: Optional[str] = None
    """A base model's cast line, a noun phrase (`Critic is a critic who ...`); null: not described."""


class ChatEvalInputs(Strict):
    """One item given in the file (`--input question=...` and the others override it)."""

    question: Optional[str] = None
    response_a: Optional[str] = None
    response_b: Optional[str] = None


# The code's first two referees, verbatim (role_description of their agents in the config of the
# prompt's source, agents/prompts/chateval.yaml); `describe` is moot's, for a base model.
GENERAL_PUBLIC = {
    "name": "General Public",
    "persona": "You are now General Public, one of the referees in this task. You are interested in the story and "
               "looking for updates on the investigation. Please think critically by yourself and note that it's "
               "your responsibility to choose one of which is the better first.",
    "describe": "a member of the general public who thinks critically for themselves"}
CRITIC = {
    "name": "Critic",
    "persona": "You are now Critic, one of the referees in this task. You will check fluent writing, clear "
               "sentences, and good wording in summary writing. Your job is to question others judgement to make "
               "sure their judgement is well-considered and offer an alternative solution if two responses are at "
               "the same level.",
    "describe": "a critic who checks for fluent writing, clear sentences and good wording, and questions the "
                "others' judgement"}


class ChatEvalScenario(ItemScenario):
    """ChatEval: a referee panel discusses answers to a question and scores them."""

    PROTOCOL = NAME
    PLACEHOLDERS = FIELDS

    protocol: Literal["chateval"]
    title: str = "ChatEval"
    """Shown in transcripts and reports."""
    input: ChatEvalInputs = ChatEvalInputs()
    task: Literal["pairwise", "scores"] = "pairwise"
    """`pairwise`: which of two answers is better (a, b or tie; the paper's FairEval task); `scores`:
    one answer (`response_a`) scored 1-10, no label."""
    max_unparsed: MaxUnparsed = MAX_UNPARSED
    referees: Annotated[list[Referee], Field(min_length=1, max_length=8)] = Field(
        default=[GENERAL_PUBLIC, CRITIC], validate_default=True)
    """The panel in speaking order (the paper's main results: General Public and Critic)."""
    strategy: Strategy = "one_by_one"
    """How the referees talk: `one_by_one`, `simultaneous` (simultaneous talk), or
    `simultaneous_summarizer` (with a summarizer), as speaker_selection.chateval describes."""
    turns: Annotated[int, Field(ge=1, le=10)] = 2
    """How many times every referee speaks; the last turn gives the scores (the paper: 2)."""
    positions: Literal["both", "given", "swapped"] = "both"
    """Pairwise: `both` runs the panel with A as Assistant 1, then with B, and sums the scores of
    both (the code, against position bias); `given` / `swapped`: one order only."""
    choice: ChoiceSetting = "auto"
    """How a referee's scores are read: `text` (its last lines, as the paper asks), `likelihood`
    (each score asked after the reply, read as the expected score under the model's probabilities;
    a backend without them answers `structured`), `structured` (`{"answer": N}`); `auto`:
    likelihood on the embedded model, else text."""
    models: dict[str, str] = {"default": "local"}
    """Which model plays whom. Keys: `default`, `referees` (every referee), `referee_1` ...
    `referee_N`, `summarizer`."""
    generation: Generation = Generation(temperature=0.0, max_tokens=512)
    """The code's settings: temperature 0, 512 tokens."""
    retry: Retry = Retry()
    backends: Backends = Backends()
    prompts: dict[str, str] = {}

    @model_validator(mode="after")
    def _consistent(self) -> "ChatEvalScenario":
        names = [r.name for r in self.referees]
        check_distinct([n.lower() for n in names], "referees")
        if "summarizer" in {n.lower() for n in names}:
            raise fail("'Summarizer' is the summarizer's name", "referees")
        check_models(self.models, ("default", "referees", *self.roles()))
        check_prompts(self.prompts, NAME, FIELDS)
        if self.strategy == "simultaneous_summarizer" and self.turns < 2:
            raise fail("simultaneous_summarizer needs turns >= 2: a summary is written before each turn after "
                       "the first", "turns")
        if self.task == "scores" and self.positions != "given":
            raise fail("task scores has one answer: set positions: given", "positions")
        return self

    @property
    def labels(self) -> list[str]:
        """The predictions a pairwise item may have (`tie`: equal summed scores); none for scores."""
        return list(LABELS) if self.task == "pairwise" else []

    def label_set(self) -> list[str]:
        return self.labels

    def roles(self) -> list[str]:
        found = [f"referee_{i}" for i in range(1, len(self.referees) + 1)]
        return found + ([SUMMARIZER] if self.strategy == "simultaneous_summarizer" else [])

    def model_keys(self, role: str) -> tuple[str, ...]:
        """models[referee_i] > models['referees'] > models['default'] > local."""
        return (role,) if role == SUMMARIZER else (role, "referees")

    def headline_metric(self) -> str:
        return "accuracy"

    def plan(self) -> PanelPlan:
        return PanelPlan(tuple(self.roles()[:len(self.referees)]), self.turns, self.strategy)

    def names(self) -> dict[str, str]:
        """Role -> name in the discussion."""
        return {**{f"referee_{i}": r.name for i, r in enumerate(self.referees, 1)}, SUMMARIZER: "Summarizer"}
