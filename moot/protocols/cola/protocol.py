"""COLA (Lan et al.): analysis stage, debating stage, stance conclusion — for one item.

1. Analysts (linguist, domain specialist, social media veteran) see only the text (and target)
   and run concurrently; they never see each other. Each is told its role in the system message.
2. One debater per label sees the text and the analyses and argues for its label. The stage runs
   as a group chat of AutoGen agents (moot.kit._stage) ordered by speaker_selection.cola;
   debaters ignore the thread.
3. The judger sees the text and every debater's argument (read from the thread) and answers one
   option; in the explainability variant with structured output {stance, explanation}.
A baseline (Table 2) is the judger alone, asked from the text with the baseline prompt.

A person may take any of these seats (`moot run --human SEAT`: an analyst, a debater, `analysts`,
`debaters`, the `judger`): shown the prompt the role's model would be sent, they write the analysis
or argument, or choose the judger's stance (and say why); the role's model stands by (a seat's
time limit). The analysts' and debaters' turns are asked together, a seat's one at a time.

The option letter (the judger with `output: option`, and the direct baseline) is read by the
scenario's `choice` (moot.protocols.items.choices): on the embedded model by likelihood, the paper's
prompt closed for scoring by a last line "Answer:" with " A", " B", " C" as the options (a chat
model's reply begins with the letter, as the prompt's constraint asks). The chain-of-thought
baseline reasons first and keeps its text answer.

On a base model (the embedded one) every role continues the item's document instead
(moot.protocols.items.document; the `document_*` and `label_*` templates): the analysts separate
branches after the post, each debater after the analyses, the judger after the arguments; the
judger's label is the most likely of the labels' `answer` words after `document_answer`, for
every variant (the chain-of-thought baseline reasons first, the JSON variant explains after).
A likelihood answer is calibrated by the scenario's `calibration`: the same prompt with the post
content-free (the analyses and arguments kept).
"""

from __future__ import annotations

from moot.contract.protocol import InputField, Protocol
from moot.kit import ANY_STAGE, Expected, expected
from moot.protocols.cola.rescore import rescore
from moot.protocols.cola.schema import JUDGER, ColaScenario, debater_name
from moot.protocols.cola.stages import run
from moot.speaker_selection.cola import next_speaker


def seats(s: ColaScenario) -> dict[str, tuple[str, ...]]:
    """The seats a person may take: each role, and the analysts or the debaters together."""
    found: dict[str, tuple[str, ...]] = {r: (r,) for r in s.roles()}
    if s.experts:
        found["analysts"] = tuple(s.experts)
    if s.debate:
        found["debaters"] = tuple(debater_name(lab) for lab in s.labels)
    return found


def scripted(s: ColaScenario) -> dict[str, Expected]:
    """A scripted analyst's or debater's turn is a plain sentence; the judger's answer (an option
    letter, a label, a structured stance) is closed: the scripted model's own rule answers it."""
    return {"analysis": expected("(scripted) My analysis: the wording of the text leans one way."),
            "debate": expected("(scripted) The analyses above support the stance I argue for."),
            ANY_STAGE: expected()}


PROTOCOL = Protocol(
    name="cola",
    title="COLA stance detection",
    paper="Lan et al. 2024, Stance Detection with Collaborative Role-Infused LLM-Based Agents",
    scenario=ColaScenario,
    policy=next_speaker,
    run=run,
    inputs=(InputField("text", "text", help="the text whose stance is judged"),
            InputField("target", "target", help="what the stance is towards"),
            InputField("role", "role", required=False,
                       help="the domain specialist's role (default: the dataset's, else from the target)")),
    result_name="stance",
    deciders=(JUDGER,),
    rescore=rescore,
    example="cola",
    calls=lambda s: float(len(s.experts) + (len(s.labels) if s.debate else 0) + 1),
    seats=seats,
    scripted=scripted,
)
