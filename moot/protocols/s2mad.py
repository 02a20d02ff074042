"""S2MAD (Zhang et al., Alg. 1): stance separation, initial opinions, debate, judge — one claim.

0. Early detection: the comments posted up to the checkpoint, in posting-time order.
1. Stance separation: every comment is scored in [-1, 1] concurrently (0 = against common sense);
   P = the k most supportive (s > 0), N = the k most opposing (s < 0). Ablation (w/o Stance): up
   to forty comments sampled at random, split into two equal parts.
2. Subjectivity: the claim is classified (Yes/No); the subjective or objective prompt then
   produces the initial opinions h_p^0 (from P) and h_n^0 (from N), concurrently.
3. Debate (AutoGen group chat, speaker_selection.s2mad): in round j each debater sees its own
   initial prompt, its own last reply and the other's round j-1 reply only; both calls of a
   round run concurrently. Same final label = consensus; otherwise the judge decides.
One agent instead (w/o Debate): the initial-opinion prompt over P and N together decides. The
vanilla baseline (Table 1): one agent, the claim and the random comments, the `vanilla` prompt.
"""

from __future__ import annotations

import asyncio
import random
import re
from dataclasses import dataclass
from typing import Optional, Sequence

from autogen_agentchat.messages import BaseChatMessage
from autogen_core.models import AssistantMessage, UserMessage
from pydantic import BaseModel

from moot.agents.prompts import render
from moot.agents.stage import StageAgent, run_group_chat
from moot.datasets import Comment
from moot.metrics import UNPARSED
from moot.protocol import InputField, Outcome, Protocol, Rescore, Rescored
from moot.protocols.labels import LabelSet
from moot.protocols.s2mad_schema import S2madScenario
from moot.runs.context import UnitContext
from moot.runs.rescore import last_call, resend
from moot.speaker_selection.conference import Turn
from moot.speaker_selection.s2mad import S2madPlan, consensus, next_speaker
from moot.verdicts import loads

P, N, JUDGE, AGENT = "debater_p", "debater_n", "judge", "agent"


class CommentScore(BaseModel):
    """The scorer's answer, with the paper's key names."""

    Reason: str = ""
    Score: float


@dataclass(frozen=True)
class ItemInput:
    id: str
    claim: str
    comments: tuple[Comment, ...]


def comments_of(given) -> tuple[Comment, ...]:
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


def labels_of(s: S2madScenario) -> LabelSet:
    return LabelSet(tuple(s.labels), tuple(s.labels), {lab: lab.capitalize() for lab in s.labels},
                    s.all_aliases())


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
    pos = sorted((x for x in scored if x[0] is not None and x[0] > 0), key=lambda x: -x[0])
    neg = sorted((x for x in scored if x[0] is not None and x[0] < 0), key=lambda x: x[0])
    return [t for _, t in pos[:k]], [t for _, t in neg[:k]]


async def separate(s: S2madScenario, ctx: UnitContext, item: ItemInput, templates) -> tuple[list[str], list[str]]:
    texts = [c.text for c in early_comments(s, item.comments)]
    if not s.stance_separation:  # up to `random_comments` at random, in two equal parts
        sample = texts[:]
        random.Random(f"{s.seed}:{item.id}").shuffle(sample)
        sample = sample[:s.random_comments]
        half = len(sample) // 2
        return sample[:half], sample[half:]

    async def score(text: str) -> Optional[float]:
        prompt = render(templates["score"], {"claim": item.claim, "comment": text})
        reply = await ctx.call("scorer", [UserMessage(content=prompt, source="user")], CommentScore,
                               stage="stance_separation", decide=lambda text: str(parse_score(text)))
        return parse_score(reply.text)

    scores = await asyncio.gather(*(score(t) for t in texts))
    return top_k(list(zip(scores, texts)), s.k)


async def is_subjective(s: S2madScenario, ctx: UnitContext, claim: str, templates) -> bool:
    if s.subjectivity != "auto":
        return s.subjectivity == "subjective"
    prompt = render(templates["subjectivity"], {"claim": claim})
    reply = await ctx.call("classifier", [UserMessage(content=prompt, source="user")], stage="subjectivity",
                           decide=lambda text: "subjective" if said_yes(text) else "objective")
    return said_yes(reply.text)


def said_yes(reply: str) -> bool:
    return re.match(r"\W*yes\b", reply.strip(), re.I) is not None


async def run(s: S2madScenario, ctx: UnitContext) -> Outcome:
    """One claim: stance separation, subjectivity, initial opinions, debate, judge."""
    item = ItemInput(ctx.unit.id, ctx.inputs["claim"], comments_of(ctx.inputs.get("comments")))
    return await run_item(s, ctx, item)


async def run_item(s: S2madScenario, ctx: UnitContext, item: ItemInput) -> Outcome:
    templates, labels = s.templates(), labels_of(s)
    options = options_of(s)
    pos, neg = await separate(s, ctx, item, templates)
    if s.baseline:
        return await one_agent(s, ctx, item.claim, pos + neg, "vanilla")
    subjective = await is_subjective(s, ctx, item.claim, templates)
    key = "opinion_subjective" if subjective else "opinion_objective"
    if not s.debate:
        return await one_agent(s, ctx, item.claim, pos + neg, key)
    opening = {P: render(templates[key], {"claim": item.claim, "comments": "\n".join(pos) or "(none)", "options": options}),
               N: render(templates[key], {"claim": item.claim, "comments": "\n".join(neg) or "(none)", "options": options})}
    decide = labels.decide
    first = await asyncio.gather(*(ctx.call(d, [UserMessage(content=opening[d], source="user")],
                                            stage="initial_opinion", round=0, decide=decide) for d in (P, N)))
    replies = {P: [first[0].text], N: [first[1].text]}
    debate = _Debate(s, ctx, templates, opening, replies, options)
    plan = S2madPlan(P, N, JUDGE, s.rounds)
    initial = tuple(_label(labels, replies[d][0]) for d in (P, N))

    def select(said: Sequence[BaseChatMessage]) -> Optional[str]:
        turns = [Turn(m.source, _label(labels, m.content)) for m in said]
        return next_speaker(plan, turns, initial)

    agents = [StageAgent(P, debate.turn(P)), StageAgent(N, debate.turn(N)),
              StageAgent(JUDGE, debate.judge(item.claim))]
    try:
        thread = await run_group_chat(agents, select, item.claim, 2 * s.rounds + 1)
    finally:
        debate.cancel()
    agreed = consensus(_label(labels, replies[P][-1]), _label(labels, replies[N][-1]))
    if agreed and not any(m.source == JUDGE for m in thread):
        return Outcome(agreed, f"consensus of both debaters after {s.rounds} round(s)", replies[P][-1],
                       decided_by="consensus")
    verdict = thread[-1].content
    return Outcome(labels.decide(verdict), "judge's determination" + debate.cut_note(), verdict, decided_by=JUDGE)


async def one_agent(s: S2madScenario, ctx: UnitContext, claim: str, comments: Sequence[str], key: str) -> Outcome:
    """One agent's answer is the label: w/o Debate (the initial-opinion prompt over P and N
    together) or the vanilla baseline (the `vanilla` prompt over the random comments)."""
    labels = labels_of(s)
    prompt = render(s.templates()[key], {"claim": claim, "comments": "\n".join(comments) or "(none)",
                                         "options": options_of(s)})
    reply = await ctx.call(AGENT, [UserMessage(content=prompt, source="user")],
                           stage="baseline" if s.baseline else "single_agent", decide=labels.decide)
    what = "the vanilla baseline's answer" if s.baseline else "the single agent's answer (no debate)"
    return Outcome(labels.decide(reply.text), what + cut_note(reply), reply.text, decided_by=AGENT)


def cut_note(reply) -> str:
    """Says so when a reply stopped at max_tokens (its answer "at the end" may be missing)."""
    return " (the reply was cut off at max_tokens)" if reply.call.finish_reason == "length" else ""


def options_of(s: S2madScenario) -> str:
    labels = labels_of(s)
    return ", ".join(labels.option_words[lab] for lab in s.labels)


async def ask_judge(s: S2madScenario, ctx: UnitContext, claim: str, reply_p: str, reply_n: str, **record):
    """The judge's call: the claim and both debaters' last replies."""
    prompt = render(s.templates()["judge"], {"claim": claim, "reply_p": reply_p, "reply_n": reply_n,
                                             "options": options_of(s)})
    return await ctx.call(JUDGE, [UserMessage(content=prompt, source="user")], stage="judge",
                          decide=labels_of(s).decide, **record)


async def rescore(s: S2madScenario, job: Rescore, ctx: UnitContext) -> Rescored:
    """The deciding role again with another model, on its recorded prompt: the judge, or the one
    agent of w/o Debate and the vanilla baseline. An item both debaters settled by consensus had
    no judge (Alg. 1) and keeps its result; with `every` the judge decides it too, from the
    debaters' last recorded replies, as it would have seen them."""
    labels = labels_of(s)
    agent = last_call(job.transcript, AGENT)
    if agent is not None or JUDGE not in job.roles:
        if agent is None or AGENT not in job.roles:
            return Rescored()
        reply = await resend(ctx, agent, decide=labels.decide)
        return Rescored(Outcome(labels.decide(reply.text), "the agent's answer", reply.text, decided_by=AGENT))
    call = last_call(job.transcript, JUDGE)
    if call is not None:
        reply = await resend(ctx, call, decide=labels.decide)
    elif job.every:
        last = {m.role: m.content for m in job.transcript.messages if m.role in (P, N)}
        reply = await ask_judge(s, ctx, job.transcript.started.inputs.get("claim", ""), last.get(P, ""),
                                last.get(N, ""), speaker=f"{JUDGE} (rescored)")
    else:
        return Rescored()
    return Rescored(Outcome(labels.decide(reply.text), "judge's determination", reply.text, decided_by=JUDGE))


def _label(labels: LabelSet, text: str) -> Optional[str]:
    """A debater's label by the shared rule (moot.protocols.labels); None if undecided."""
    found = labels.decide(text)
    return None if found == UNPARSED else found


class _Debate:
    """Debate state of one item: replies so far; a round's two calls start together."""

    def __init__(self, s, ctx, templates, opening, replies, options):
        self.s, self.ctx, self.templates, self.opening = s, ctx, templates, opening
        self.replies, self.options = replies, options
        self.rounds: dict[int, dict[str, asyncio.Task]] = {}
        self.judged = None  # the judge's Reply, once it spoke

    def _messages(self, who: str, j: int) -> list:
        other = N if who == P else P
        ask = render(self.templates["debate"], {"other": self.replies[other][j - 1], "options": self.options})
        return [UserMessage(content=self.opening[who], source="user"),
                AssistantMessage(content=self.replies[who][j - 1], source=who),
                UserMessage(content=ask, source="user")]

    def turn(self, who: str):
        async def respond(thread: Sequence[BaseChatMessage]) -> str:
            j = len(self.replies[who])  # this debater's round
            if j not in self.rounds:
                self.rounds[j] = {d: asyncio.ensure_future(self.ctx.call(
                    d, self._messages(d, j), stage="debate", round=j, decide=labels_of(self.s).decide))
                    for d in (P, N)}
            text = (await self.rounds[j][who]).text
            self.replies[who].append(text)
            return text

        return respond

    def judge(self, claim: str):
        async def respond(thread: Sequence[BaseChatMessage]) -> str:
            self.judged = await ask_judge(self.s, self.ctx, claim, self.replies[P][-1], self.replies[N][-1])
            return self.judged.text

        return respond

    def cut_note(self) -> str:
        return cut_note(self.judged) if self.judged is not None else ""

    def cancel(self) -> None:
        for tasks in self.rounds.values():
            for task in tasks.values():
                task.cancel()


PROTOCOL = Protocol(
    name="s2mad",
    title="S2MAD rumor detection",
    paper="Zhang et al. 2025, Stance-aware and Subjectivity-aware Multi-Agent Debate for rumor detection",
    scenario=S2madScenario,
    policy=next_speaker,
    run=run,
    inputs=(InputField("claim", "text", help="the post whose veracity is judged"),
            InputField("comments", "comments", required=False, many=True, help="replies to the post")),
    result_name="veracity",
    deciders=(JUDGE, AGENT),
    rescore=rescore,
    example="s2mad",
)
