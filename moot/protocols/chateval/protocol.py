"""ChatEval (Chan et al. 2023, "ChatEval: Towards Better LLM-based Evaluators through Multi-Agent
Debate"): a panel of referees with distinct personas discusses the answers of AI assistants to a
question, then scores them from 1 to 10; as thunlp/ChatEval's code ran the paper's experiments
(commit 3bb65ab).

- `task: pairwise` (the paper's FairEval setting): two answers, A and B. Each referee speaks once
  per turn for `turns` turns, in the scenario's communication strategy (speaker_selection.chateval:
  one by one, simultaneous talk, simultaneous talk with a summarizer); in the last turn each
  gives both assistants a score. As the code does against position bias, the panel runs twice
  (`positions: both`): A shown as Assistant 1, then B. The preference is the code's aggregation:
  the sum of each answer's scores over every referee and order; equal sums are a tie.
- `task: scores` (moot's form of the paper's direct scoring): one answer, one score per referee;
  the item's score is their mean. Nothing is predicted: there is no label.

A referee's scores are recorded as a `judgement` event with its last message. Read from the
reply as the paper asks for them (`choice: text`: the reply's last lines `The score of Assistant
1: N` and `... 2: N`), or asked after the reply (`likelihood`: the expected score under the
model's probabilities of 1..10; `structured`: `{"answer": N}`). A reply whose scores cannot be
read is recorded as unparsed, and any unparsed judgement makes the item `unparsed` (the code
counts such an item as a tie). On a base model (the embedded one) the referees continue one
transcript document per order instead of the chat prompts (agents/prompts/chateval.yaml).
`moot report` shows accuracy and Cohen's kappa against the human labels (ChatEval Table 1).
"""

from __future__ import annotations

from moot.contract.protocol import InputField, Protocol
from moot.contract.report import Reporting
from moot.contract.vary import GENERIC, Data, VaryKey, set_path
from moot.kit import ANY_STAGE, EventType, Expected, expected
from moot.protocols.chateval.events import Judgement
from moot.protocols.chateval.panel import run
from moot.protocols.chateval.report import table_cells, variant
from moot.protocols.chateval.schema import HI, LO, ChatEvalScenario, NAME
from moot.protocols.chateval.views import ChatEvalView
from moot.speaker_selection.chateval import STRATEGIES, SUMMARIZER, next_speaker


def _strategy(data: Data, value: object) -> Data:
    if value not in STRATEGIES:
        raise ValueError(f"a strategy is one of {', '.join(STRATEGIES)}")
    return set_path(data, "strategy", value)


def _turns(data: Data, value: object) -> Data:
    try:
        return set_path(data, "turns", int(str(value)))
    except ValueError:
        raise ValueError("turns is a whole number") from None


SCORES = tuple(str(n) for n in range(LO, HI + 1))
PAIR = ("(scripted) Evaluation evidence: both answers address the question.\n"
        "The score of Assistant 1: {first}\nThe score of Assistant 2: {second}")


def scripted(s: ChatEvalScenario) -> dict[str, Expected]:
    """A scripted referee's turn ends with the scores the code asks for, by the order its stage
    names (`ab`, `ba`: two assistants; `panel`: one); a summary is a plain sentence."""
    pair = expected(PAIR, first=SCORES, second=SCORES)
    return {"ab": pair, "ba": pair, ANY_STAGE: expected("(scripted) The referees weighed the answers."),
            "panel": expected("(scripted) Evaluation evidence: the answer addresses the question.\n"
                              "The score of the assistant: {score}", score=SCORES)}


PROTOCOL = Protocol(
    name=NAME,
    title="ChatEval: a referee panel's multi-agent debate",
    paper="Chan et al. 2023, ChatEval: Towards Better LLM-based Evaluators through Multi-Agent Debate",
    scenario=ChatEvalScenario,
    policy=next_speaker,
    run=run,
    inputs=(InputField("question", "question", help="the user's question (or dialogue context) the answers reply to"),
            InputField("response_a", "response_a", help="answer A (task scores: the answer scored)"),
            InputField("response_b", "response_b", required=False, help="answer B (task pairwise)")),
    result_name="preference",
    example=NAME,
    events=(EventType(Judgement),),
    view=ChatEvalView,
    vary=(*GENERIC, VaryKey("strategy", "the communication strategy", _strategy),
          VaryKey("turns", "how many turns the referees talk", _turns)),
    report=Reporting(variant=variant, tables=table_cells),
    seats=lambda s: {**{r: (r,) for r in s.roles() if r != SUMMARIZER},
                     "referees": tuple(r for r in s.roles() if r != SUMMARIZER)},
    scripted=scripted,
)
