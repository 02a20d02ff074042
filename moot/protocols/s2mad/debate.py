"""The run of one S2MAD claim (Zhang et al., Alg. 1): stance separation, subjectivity, initial
opinions, debate, judge.

2. The subjective or objective prompt produces the initial opinions h_p^0 (from P) and h_n^0
   (from N), concurrently.
3. Debate (a group chat of AutoGen agents, speaker_selection.s2mad): in round j each debater sees its own
   initial prompt, its own last reply and the other's round j-1 reply only; both calls of a
   round run concurrently. Same final label = consensus; otherwise the judge decides.
One agent instead (w/o Debate): the initial-opinion prompt over P and N together decides. The
vanilla baseline (Table 1): one agent, the claim and the random comments, the `vanilla` prompt.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import replace
from typing import Mapping, Optional, Sequence

from autogen_agentchat.messages import BaseChatMessage
from autogen_core.models import AssistantMessage, LLMMessage, UserMessage

from moot.agents.prompts import inset, render
from moot.contract.protocol import Outcome
from moot.kit import Respond, StageAgent, UNPARSED, UnitContext, cancel_calls
from moot.protocols.s2mad.document import AGENT, JUDGE, N, P, Build, ClaimDocuments, Content, Said
from moot.protocols.s2mad.judge import ask_judge
from moot.protocols.s2mad.schema import S2madScenario
from moot.protocols.s2mad.stance import ItemInput, comments_of, separate
from moot.protocols.s2mad.subjectivity import is_subjective
from moot.protocols.s2mad.turns import Answer, options_of, turn_of
from moot.speaker_selection.conference import Turn
from moot.speaker_selection.s2mad import S2madPlan, consensus, next_speaker


async def run(s: S2madScenario, ctx: UnitContext) -> Outcome:
    """One claim: stance separation, subjectivity, initial opinions, debate, judge."""
    item = ItemInput(ctx.unit.id, ctx.inputs["claim"], comments_of(ctx.inputs.get("comments")))
    return await run_item(s, ctx, item)


async def run_item(s: S2madScenario, ctx: UnitContext, item: ItemInput) -> Outcome:
    templates, options = s.templates(), options_of(s)
    pos, neg = await separate(s, ctx, item, templates)
    if s.baseline:
        return await one_agent(s, ctx, item.claim, pos + neg, "vanilla")
    subjective = await is_subjective(s, ctx, item.claim, templates)
    key = "opinion_subjective" if subjective else "opinion_objective"
    if not s.debate:
        return await one_agent(s, ctx, item.claim, pos + neg, key)
    opening = {P: render(templates[key], {"claim": item.claim, "comments": "\n".join(pos) or "(none)", "options": options}),
               N: render(templates[key], {"claim": item.claim, "comments": "\n".join(neg) or "(none)", "options": options})}
    openings = [[UserMessage(content=opening[d], source="user")] for d in (P, N)]
    read = {P: tuple(pos), N: tuple(neg)}
    docs = ClaimDocuments(templates)
    first = await asyncio.gather(*(turn_of(s, ctx, d, m, "initial_opinion", 0,
                                           document=(docs.opinion_of(d, 0), Content(item.claim, read[d])))
                                   for d, m in zip((P, N), openings)))
    replies = {P: [first[0][0]], N: [first[1][0]]}
    debate = _Debate(s, ctx, templates, opening, replies, options, {P: [first[0][1]], N: [first[1][1]]},
                     Content(item.claim), read)
    plan = S2madPlan(P, N, JUDGE, s.rounds)

    def select(said: Sequence[BaseChatMessage]) -> Optional[str]:
        return next_speaker(plan, debate.turns(said), (debate.said[P][0].label, debate.said[N][0].label))

    agents = [StageAgent(P, debate.turn(P)), StageAgent(N, debate.turn(N)),
              StageAgent(JUDGE, debate.judge(item.claim))]
    try:
        thread = await ctx.group_chat(agents, select, item.claim, 2 * s.rounds + 1)
    finally:
        debate.cancel()
    last = {d: debate.said[d][-1] for d in (P, N)}
    agreed = consensus(last[P].label, last[N].label)
    # both debaters' answers per round (0: the initial opinions), for the deliberation's dynamics
    answers = {"answers": [[said.label or UNPARSED for said in pair] for pair in zip(debate.said[P], debate.said[N])]}
    if agreed and not any(m.source == JUDGE for m in thread):
        return Outcome(agreed, f"consensus of both debaters after {s.rounds} round(s)" + last[P].note,
                       replies[P][-1], decided_by="consensus", summary=answers)
    verdict = debate.verdict
    assert verdict is not None  # no consensus: the judge spoke
    return Outcome(verdict.label or UNPARSED, "judge's determination" + verdict.note, thread[-1].to_text(),
                   decided_by=verdict.by(JUDGE), summary=answers)


async def one_agent(s: S2madScenario, ctx: UnitContext, claim: str, comments: Sequence[str], key: str) -> Outcome:
    """One agent's answer is the label: w/o Debate (the initial-opinion prompt over P and N
    together) or the vanilla baseline (the `vanilla` prompt over the random comments)."""
    prompt = render(s.templates()[key], {"claim": claim, "comments": "\n".join(comments) or "(none)",
                                         "options": options_of(s)})
    text, said = await turn_of(s, ctx, AGENT, [UserMessage(content=prompt, source="user")],
                               "baseline" if s.baseline else "single_agent", 1,
                               document=(ClaimDocuments(s.templates()).opinion_of(AGENT, 0),
                                         Content(claim, tuple(comments))))
    what = "the vanilla baseline's answer" if s.baseline else "the single agent's answer (no debate)"
    return Outcome(said.label or UNPARSED, what + said.note, text, decided_by=said.by(AGENT))


class _Debate:
    """Debate state of one item: replies and their answers so far; a round's two calls start together."""

    def __init__(self, s: S2madScenario, ctx: UnitContext, templates: Mapping[str, str], opening: dict[str, str],
                 replies: dict[str, list[str]], options: str, said: dict[str, list[Answer]], claim: Content,
                 read: dict[str, tuple[str, ...]]):
        self.s, self.ctx, self.templates, self.opening = s, ctx, templates, opening
        self.replies, self.options, self.said = replies, options, said
        self.claim, self.read, self.docs = claim, read, ClaimDocuments(templates)
        self.rounds: dict[int, dict[str, asyncio.Future[tuple[str, Answer]]]] = {}
        self.verdict: Optional[Answer] = None  # the judge's, once it spoke

    def _messages(self, who: str, j: int) -> list[LLMMessage]:
        other = N if who == P else P
        ask = render(self.templates["debate"], {"other": inset(self.replies[other][j - 1]), "options": self.options})
        return [UserMessage(content=self.opening[who], source="user"),
                AssistantMessage(content=self.replies[who][j - 1], source=who),
                UserMessage(content=ask, source="user")]

    def _document(self, who: str, j: int) -> tuple[Build, Content]:
        """Round j's document of a debater (a base model): the replies it read, then both
        debaters' turns of the rounds before, its own first."""
        other = N if who == P else P
        turns = [Said(d, self.replies[d][q], self.said[d][q].label) for q in range(j) for d in (who, other)]
        return self.docs.opinion_of(who, j), replace(self.claim, comments=self.read[who], turns=tuple(turns))

    def turns(self, said: Sequence[BaseChatMessage]) -> list[Turn]:
        """The debate so far as the speaker policy reads it: each turn with its answer's label."""
        seen: Counter[str] = Counter()
        out = []
        for m in said:
            seen[m.source] += 1
            label = self.said[m.source][seen[m.source]].label if m.source in (P, N) else None
            out.append(Turn(m.source, label))
        return out

    def turn(self, who: str) -> Respond:
        async def respond(thread: Sequence[BaseChatMessage]) -> str:
            j = len(self.replies[who])  # this debater's round
            if j not in self.rounds:
                self.rounds[j] = {d: asyncio.ensure_future(turn_of(self.s, self.ctx, d, self._messages(d, j),
                                                                   "debate", j, document=self._document(d, j)))
                                  for d in (P, N)}
            text, said = await self.rounds[j][who]
            self.replies[who].append(text)
            self.said[who].append(said)
            return text

        return respond

    def judge(self, claim: str) -> Respond:
        async def respond(thread: Sequence[BaseChatMessage]) -> str:
            text, self.verdict = await ask_judge(self.s, self.ctx, claim, self.replies[P][-1], self.replies[N][-1],
                                                 (self.said[P][-1].label, self.said[N][-1].label))
            return text

        return respond

    def cancel(self) -> None:
        cancel_calls(task for tasks in self.rounds.values() for task in tasks.values())
