"""The decision-conference judge alone as a zero-shot classifier (Heller et al. 2025, §4.1, §5.1).

The paper evaluates the judge's model on stance detection (VAST: pro / con / neutral; IBM Claim
Stance: pro / con) and stance-polarity detection (IBM Claim Stance: positive / negative /
neutral) before using it to detect agreement. Here the judge of a conference scenario (its name,
persona and model) gets one item at a time: a system prompt as the judge and one question, and
answers {label, explanation} as structured output whose `label` is a Literal of the label set
(llama.cpp grammars / OpenAI json_schema constrain it). A reply that maps onto no label is
`unparsed`. Items run as a dataset run (`moot judge-eval`, .command): resumable,
cached, concurrent. The prompt texts are in agents/prompts/judge_eval.yaml.
"""

from __future__ import annotations

from moot.contract.protocol import InputField, Protocol
from moot.contract.report import Reporting
from moot.kit import ANY_STAGE, expected
from moot.protocols.judge_eval.command import COMMAND
from moot.protocols.judge_eval.judge import rescore, run
from moot.protocols.judge_eval.report import table_cells, variant
from moot.protocols.judge_eval.schema import JUDGE, NAME, JudgeEvalScenario


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
