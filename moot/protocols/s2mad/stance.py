"""S2MAD's stance separation (Zhang et al., Alg. 1, steps 0-1) of one claim's comments.

0. Early detection: the comments posted up to the checkpoint, in posting-time order.
1. Every comment is scored in [-1, 1] concurrently (0 = against common sense); P = the k most
   supportive (s > 0), N = the k most opposing (s < 0). Ablation (w/o Stance): up to forty
   comments sampled at random, split into two equal parts. On a base model the scorer's support
   of a reply is read by likelihood in its document.
"""

from __future__ import annotations

import asyncio
import random
import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional, Sequence

from autogen_core.models import UserMessage
from pydantic import BaseModel

from moot.agents.prompts import render
from moot.kit import Comment, UnitContext, loads
from moot.protocols.items.choices import ask_choice, calibrates, document_method
from moot.protocols.items.document import in_document
from moot.protocols.s2mad.document import ClaimDocuments, Content
from moot.protocols.s2mad.schema import S2madScenario

SUPPORTS, DENIES = "true", "false"  # the scorer's options in document form: the reply says the post is ...


class CommentScore(BaseModel):
    """The scorer's answer, with the paper's key names."""

    Reason: str = ""
    Score: float


@dataclass(frozen=True)
class ItemInput:
    id: str
    claim: str
    comments: tuple[Comment, ...]


def comments_of(given: Optional[Iterable[object]]) -> tuple[Comment, ...]:
    """Comments as given: Comment objects (a dataset), {text, time} mappings or plain strings."""
    out = []
    for c in given or ():
        if isinstance(c, Comment):
            out.append(c)
        elif isinstance(c, dict):
            out.append(Comment(str(c.get("text", "")), c.get("time")))
        else:
            out.append(Comment(str(c)))
    return tuple(out)


def early_comments(s: S2madScenario, comments: Sequence[Comment]) -> list[Comment]:
    """The comments posted up to the checkpoint, oldest first (untimed ones last, in file order);
    without `early`, all of them as given."""
    if s.early.first_n is None and s.early.before_s is None:
        return list(comments)
    ordered = sorted(comments, key=lambda c: (c.time is None, c.time or 0.0))
    kept = [c for c in ordered if s.early.before_s is None or (c.time is not None and c.time < s.early.before_s)]
    return kept[:s.early.first_n] if s.early.first_n else kept


def parse_score(text: str) -> Optional[float]:
    """The Score of a scorer reply, clamped to [-1, 1]; None if there is none."""
    match = re.search(r'"?score"?\s*:\s*"?\s*(-?\d+(?:\.\d+)?)', text, re.I)
    if match is None:
        try:
            return max(-1.0, min(1.0, float(loads(text))))
        except (ValueError, TypeError):
            return None
    return max(-1.0, min(1.0, float(match.group(1))))


def top_k(scored: Sequence[tuple[Optional[float], str]], k: int) -> tuple[list[str], list[str]]:
    """(P, N) of Eq. 2: the k highest positive and the k lowest negative scores (stable order)."""
    known = [(score, text) for score, text in scored if score is not None]
    pos = sorted((x for x in known if x[0] > 0), key=lambda x: -x[0])
    neg = sorted((x for x in known if x[0] < 0), key=lambda x: x[0])
    return [t for _, t in pos[:k]], [t for _, t in neg[:k]]


def sample_seed(s: S2madScenario, item_id: str) -> str:
    """The random sample's seed: the scenario's `seed`, the run's `generation.seed` (what an
    experiment's repeats vary, so each repeat draws its own sample) and the claim."""
    return f"{s.seed}:{s.generation.seed}:{item_id}"


async def separate(s: S2madScenario, ctx: UnitContext, item: ItemInput, templates: Mapping[str, str]) -> tuple[list[str], list[str]]:
    texts = [c.text for c in early_comments(s, item.comments)]
    if not s.stance_separation:  # up to `random_comments` at random, in two equal parts
        sample = texts[:]
        random.Random(sample_seed(s, item.id)).shuffle(sample)
        sample = sample[:s.random_comments]
        half = len(sample) // 2
        return sample[:half], sample[half:]

    docs = ClaimDocuments(templates)

    async def score(text: str) -> Optional[float]:
        if in_document(ctx, "scorer"):
            return await score_in_document(s, ctx, docs, item.claim, text)
        prompt = render(templates["score"], {"claim": item.claim, "comment": text})
        reply = await ctx.call("scorer", [UserMessage(content=prompt, source="user")], CommentScore,
                               stage="stance_separation", decide=lambda text: str(parse_score(text)))
        return parse_score(reply.text)

    scores = await asyncio.gather(*(score(t) for t in texts))
    return top_k(list(zip(scores, texts)), s.k)


async def score_in_document(s: S2madScenario, ctx: UnitContext, docs: ClaimDocuments, claim: str,
                            comment: str) -> Optional[float]:
    """A base model's score of a reply: p(true) - p(false) after `document_score` ("According to
    this reply, the post is"), in [-1, 1] (calibrated: the same question about a content-free reply
    to the same post)."""
    content = Content(claim, (comment,))
    answered = await ask_choice(ctx, "scorer", docs.reply(content).messages(), (SUPPORTS, DENIES),
                                document_method(s.choice), prefix=render(docs.templates["document_score"], {}),
                                document=True, stage="stance_separation",
                                content_free=lambda text: docs.reply(Content(claim, (text,))).messages(),
                                calibrated=calibrates(ctx, "scorer", s.calibration), decide=lambda text: text)
    measured = answered.measured
    if measured is not None:
        probabilities = measured.calibrated or measured.probabilities
        return round(probabilities[SUPPORTS] - probabilities[DENIES], 4)
    return {SUPPORTS: 1.0, DENIES: -1.0}.get(answered.option or "")
