"""S2MAD's subjectivity step (Zhang et al., Alg. 1, step 2): is the claim subjective (Yes/No)?

The answer picks the initial-opinion prompt (subjective or objective). With `text` (the paper's
way) the Yes/No is read from the reply's first word; otherwise "Please answer Yes or No." is
scored directly (closed by "Answer:" in document form). A scenario's `subjectivity:` other than
`auto` asks nothing (ablations).
"""

from __future__ import annotations

import re
from typing import Mapping

from autogen_core.models import UserMessage

from moot.agents.prompts import render
from moot.kit import UnitContext
from moot.protocols.items.choices import ask_choice, calibrates, chosen_option, document_method, method_for
from moot.protocols.items.document import in_document
from moot.protocols.s2mad.document import ClaimDocuments, Content
from moot.protocols.s2mad.schema import S2madScenario


async def is_subjective(s: S2madScenario, ctx: UnitContext, claim: str, templates: Mapping[str, str]) -> bool:
    if s.subjectivity != "auto":
        return s.subjectivity == "subjective"
    if in_document(ctx, "classifier"):
        docs = ClaimDocuments(templates)
        answered = await ask_choice(ctx, "classifier", docs.claim(Content(claim)).messages(), ("yes", "no"),
                                    document_method(s.choice), prefix=render(templates["document_subjectivity"], {}),
                                    document=True, content_free=lambda text: docs.claim(Content(text)).messages(),
                                    calibrated=calibrates(ctx, "classifier", s.calibration), stage="subjectivity",
                                    decide=lambda text: "subjective" if chosen_option(text) == "yes" else "objective")
        return chosen_option(answered.text) == "yes"
    prompt = render(templates["subjectivity"], {"claim": claim})
    method = method_for(ctx, "classifier", s.choice, "text")
    yes = said_yes if method == "text" else (lambda text: chosen_option(text) == "Yes")  # noqa: E731
    reply = await ask_choice(ctx, "classifier", [UserMessage(content=prompt, source="user")], ("Yes", "No"),
                             method, stage="subjectivity",
                             decide=lambda text: "subjective" if yes(text) else "objective")
    return yes(reply.text)


def said_yes(reply: str) -> bool:
    return re.match(r"\W*yes\b", reply.strip(), re.I) is not None
