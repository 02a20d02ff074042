"""S2MAD (Zhang et al., Alg. 1): stance separation, initial opinions, debate, judge — one claim.

0. Early detection: the comments posted up to the checkpoint, in posting-time order.
1. Stance separation: every comment is scored in [-1, 1] concurrently (0 = against common sense);
   P = the k most supportive (s > 0), N = the k most opposing (s < 0). Ablation (w/o Stance): up
   to forty comments sampled at random, split into two equal parts.
2. Subjectivity: the claim is classified (Yes/No); the subjective or objective prompt then
   produces the initial opinions h_p^0 (from P) and h_n^0 (from N), concurrently.
3. Debate (a group chat of AutoGen agents, speaker_selection.s2mad): in round j each debater sees its own
   initial prompt, its own last reply and the other's round j-1 reply only; both calls of a
   round run concurrently. Same final label = consensus; otherwise the judge decides.
One agent instead (w/o Debate): the initial-opinion prompt over P and N together decides. The
vanilla baseline (Table 1): one agent, the claim and the random comments, the `vanilla` prompt.

Closed answers are read by the scenario's `choice` (moot.protocols.items.choices). With `text` (the
paper's way) a debater's, the judge's or the agent's label is parsed from its reply and the
classifier's Yes/No from its first word. Otherwise the classifier's "Please answer Yes or No." is
scored directly (closed by "Answer:" in document form), and a reasoning reply is followed by the
question its prompt ended with, asked on its own (template `answer`: "Please choose the answer
from the following options: Fake, Real.", closed by "Answer:"): the label comes from that call,
by likelihood on the embedded model; the reasoning stays the paper's.

A person may take a debater's seat (`moot run --human debater_p`, or `debaters`), the judge's or
the one agent's: shown the prompt the role's model would be sent, they write the turn and choose
its label, which the debate reads as it reads a model's (consensus, the judge's verdict).
"""

from __future__ import annotations

import asyncio
import random
import re
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from autogen_agentchat.messages import BaseChatMessage
from autogen_core.models import AssistantMessage, LLMMessage, UserMessage
from pydantic import BaseModel

from moot.agents.prompts import inset, render
from moot.kit import (
    ANY_STAGE, Asking, Call, Comment, Expected, Message, Question, Reply, Respond, RunResults, Seat, StageAgent,
    Transcript, UNPARSED, UnitContext, cancel_calls, expected, loads, recorded_messages, resend, shown_of,
)
from moot.contract.protocol import InputField, Outcome, Protocol, Rescore, Rescored
from moot.contract.report import ReportPart, Reporting
from moot.protocols.items.choices import Answered, ask_choice, calibrates, chosen_option, document_method, how_read, method_for
from moot.protocols.items.document import in_document, speak
from moot.protocols.s2mad.document import AGENT, JUDGE, N, P, Build, ClaimDocuments, Content, Said
from moot.protocols.items.labels import LabelSet
from moot.protocols.items.metrics import RUMOUR_METRICS, answers_of
from moot.protocols.s2mad.schema import S2madScenario
from moot.speaker_selection.conference import Turn
from moot.speaker_selection.s2mad import S2madPlan, consensus, next_speaker

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


@dataclass(frozen=True)
class Answer:
    """The label a role's reply came to (None: undecided), how it was read, and the deciding call."""

    label: Optional[str]
    note: str
    reply: Union[Reply, Answered, None]  # the deciding call, or the closed answer asked after it; None: a person's

    def by(self, role: str) -> str:
        if self.reply is None:
            return f"{role} (human)"
        return f"{role} ({self.reply.method})" if self.reply.measured else role

    @property
    def raw(self) -> str:
        return self.reply.text if self.reply is not None else ""


async def turn_of(s: S2madScenario, ctx: UnitContext, role: str, messages: Sequence[LLMMessage], stage: str,
                  round: int, document: Optional[tuple[Build, Content]] = None, **record: Any) -> tuple[str, Answer]:
    """A reasoning turn and the label it came to: a person's at the role's seat (shown the
    role's prompt, they write the turn and choose its label), else its model's (`reason`)."""
    def asking(seat: Seat) -> Asking:
        return Asking(seat.spec.name, role, role, f"{stage} R{round}", stage,
                      (Question("text", "Your turn, with your reasons"), Question("label", "Your answer", tuple(s.labels))),
                      shown=shown_of(messages))

    async def by_model() -> tuple[str, Answer]:
        reply, said = await reason(s, ctx, role, messages, stage, round, document, **record)
        return reply.text, said

    def by_person(said: Message) -> tuple[str, Answer]:
        label = said.decision if said.decision in s.labels else None
        return said.content, Answer(label, "" if label else " (the person's turn was skipped)", None)

    return await ctx.person_or_model(ctx.seat(role), asking, by_model, by_person, role=role, stage=stage, round=round,
                                     content=lambda given: (given.get("text", ""), given.get("label", UNPARSED)))


async def reason(s: S2madScenario, ctx: UnitContext, role: str, messages: Sequence[LLMMessage], stage: str, round: int,
                 document: Optional[tuple[Build, Content]] = None, **record: Any) -> tuple[Reply, Answer]:
    """A reasoning call as the paper prompts it, and the label it came to (`answer`); on a base
    model the role's turn in its `document` (built from the item's content) and its verdict."""
    if document is not None and in_document(ctx, role):
        return await reason_in_document(s, ctx, role, *document, stage, round, **record)
    reply = await ctx.call(role, messages, stage=stage, round=round, decide=labels_of(s).decide, **record)
    return reply, await answer(s, ctx, role, messages, reply, stage, round)


async def reason_in_document(s: S2madScenario, ctx: UnitContext, role: str, build: Build, content: Content,
                             stage: str, round: int, speaker: Optional[str] = None) -> tuple[Reply, Answer]:
    """A base model's turn (it continues `build(content)`) and its verdict: the label most likely
    after `document_verdict`, read from a short document of its own (the post and the turn), so
    its content-free twins (calibration) are the same for every item and kept in the cache."""
    labels = labels_of(s)
    docs = ClaimDocuments(s.templates())
    name, opening = docs.names[role], docs.opening(role)
    reply = await speak(ctx, role, [], build(content), name, opening=opening, stage=stage,
                        round=round, speaker=speaker)

    def content_free_turn(text: str) -> str:
        """A content-free turn: its opening words (the template's), then the content-free text."""
        return f"{' '.join(opening.split())} {text}".strip()

    answered = await ask_choice(ctx, role, docs.verdict_document(role, content.claim, reply.text).messages(),
                                list(s.labels), document_method(s.choice), prefix=docs.verdict(role), document=True,
                                content_free=lambda text: docs.verdict_document(role, text, content_free_turn(text)).messages(),
                                calibrated=calibrates(ctx, role, s.calibration),
                                stage=f"{stage}_answer", round=round, speaker=speaker,
                                decide=lambda text: labels.map(text)[0])
    found = labels.map(answered.text)[0]
    return reply, Answer(None if found == UNPARSED else found, how_read(answered), answered.reply)


async def answer(s: S2madScenario, ctx: UnitContext, role: str, messages: Sequence[LLMMessage], reply: Reply, stage: str,
                 round: int) -> Answer:
    """The label of a reasoning reply: parsed from it (`text`), or asked for after it as a closed
    choice (see the module docstring)."""
    labels = labels_of(s)
    method = method_for(ctx, role, s.choice, "text")
    if method == "text":
        return Answer(_label(labels, reply.text), cut_note(reply), reply)
    ask = render(s.templates()["answer"], {"options": options_of(s)})
    follow = [*messages, AssistantMessage(content=reply.text, source=role), UserMessage(content=ask, source="user")]
    words = [labels.option_words[lab] for lab in s.labels]
    chosen = await ask_choice(ctx, role, follow, words, method, stage=f"{stage}_answer", round=round,
                              decide=lambda text: labels.map(text)[0])
    found = labels.map(chosen.text)[0]
    return Answer(None if found == UNPARSED else found, how_read(chosen), chosen)


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


def cut_note(reply: Reply) -> str:
    """Says so when a reply stopped at max_tokens (its answer "at the end" may be missing)."""
    return " (the reply was cut off at max_tokens)" if reply.call.finish_reason == "length" else ""


def options_of(s: S2madScenario) -> str:
    labels = labels_of(s)
    return ", ".join(labels.option_words[lab] for lab in s.labels)


async def ask_judge(s: S2madScenario, ctx: UnitContext, claim: str, reply_p: str, reply_n: str,
                    labels: tuple[Optional[str], Optional[str]] = (None, None), **record: Any) -> tuple[str, Answer]:
    """The judge's turn: the claim and both debaters' last replies (and, on a base model, their verdicts)."""
    prompt = render(s.templates()["judge"], {"claim": claim, "reply_p": inset(reply_p), "reply_n": inset(reply_n),
                                             "options": options_of(s)})
    content = Content(claim, turns=(Said(P, reply_p, labels[0]), Said(N, reply_n, labels[1])))
    return await turn_of(s, ctx, JUDGE, [UserMessage(content=prompt, source="user")], "judge", 1,
                         document=(ClaimDocuments(s.templates()).judged, content), **record)


async def rescore(s: S2madScenario, job: Rescore, ctx: UnitContext) -> Rescored:
    """The deciding role again with another model, on its recorded prompt: the judge, or the one
    agent of w/o Debate and the vanilla baseline. An item both debaters settled by consensus had
    no judge (Alg. 1) and keeps its result; with `every` the judge decides it too, from the
    debaters' last recorded replies, as it would have seen them."""
    agent = last_reasoning(job.transcript, AGENT)
    if agent is not None or JUDGE not in job.roles:
        if agent is None or AGENT not in job.roles:
            return Rescored()
        said = await resent(s, ctx, agent)
        return Rescored(Outcome(said.label or UNPARSED, "the agent's answer" + said.note, said.raw,
                                decided_by=said.by(AGENT)))
    call = last_reasoning(job.transcript, JUDGE)
    if call is not None and not in_document(ctx, JUDGE):
        said = await resent(s, ctx, call)
    elif call is not None or job.every:  # a base model's judge document is rebuilt from the debaters' last turns
        said = await judge_again(s, ctx, job.transcript)
    else:
        return Rescored()
    return Rescored(Outcome(said.label or UNPARSED, "judge's determination" + said.note, said.raw,
                            decided_by=said.by(JUDGE)))


async def judge_again(s: S2madScenario, ctx: UnitContext, transcript: Transcript) -> Answer:
    """The judge asked anew from the debaters' last recorded turns (and labels), as it would
    have seen them."""
    turns = [m for m in transcript.messages if m.role in (P, N)]
    last = {m.role: m.content for m in turns if not m.action.endswith("_answer")}
    labels = {m.role: m.decision for m in turns if m.decision in s.labels}
    _, said = await ask_judge(s, ctx, transcript.started.inputs.get("claim", ""), last.get(P, ""), last.get(N, ""),
                              (labels.get(P), labels.get(N)), speaker=f"{JUDGE} (rescored)")
    return said


def last_reasoning(transcript: Transcript, role: str) -> Optional[Call]:
    """The role's last reasoning call (not the follow-up asking for its answer)."""
    found = [c for c in transcript.calls if c.role == role and not c.stage.endswith("_answer")]
    return found[-1] if found else None


async def resent(s: S2madScenario, ctx: UnitContext, call: Call) -> Answer:
    messages = recorded_messages(call)
    reply = await resend(ctx, call, decide=labels_of(s).decide)
    return await answer(s, ctx, call.role, messages, reply, call.stage, 1)


def _label(labels: LabelSet, text: str) -> Optional[str]:
    """A debater's label by the shared rule (moot.protocols.items.labels); None if undecided."""
    found = labels.decide(text)
    return None if found == UNPARSED else found


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


def seats(s: S2madScenario) -> dict[str, tuple[str, ...]]:
    """The seats a person may take: each debater, both (`debaters`), the judge, the one agent
    (the scorer's and the classifier's answers are no turns)."""
    found: dict[str, tuple[str, ...]] = {r: (r,) for r in s.roles() if r not in ("scorer", "classifier")}
    if P in found and N in found:
        found["debaters"] = (P, N)
    return found


def report_part(runs: Sequence[RunResults], plots: Path) -> ReportPart:
    """Its plots in a report (moot.protocols.s2mad.report, imported only by a report)."""
    from moot.protocols.s2mad.report import part

    return part(runs, plots)


def scripted(s: S2madScenario) -> dict[str, Expected]:
    """A scripted debater's or judge's turn ends with "Answer: <label>"; the subjectivity question
    is answered Yes or No."""
    return {ANY_STAGE: expected("(scripted) I weighed the claim and its comments.\nAnswer: {label}", label=s.labels),
            "subjectivity": expected("{answer}", answer=("Yes", "No"))}


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
    metrics=RUMOUR_METRICS,
    report=Reporting(part=report_part),
    rounds=answers_of,  # the debaters' answers per round (none without the debate)
    seats=seats,
    scripted=scripted,
)
