"""What a conference agent is shown of the conversation so far: its context window.

Heller et al. run an AutoGen 0.2 group chat, where every message is broadcast to every agent and
each replies from the whole conversation, across topics. The paper does not say so; it is what
AutoGen 0.2 does (an inference, docs/protocols.md). That is moot's default, `window: conference`.
Narrower windows, for long conferences and small context windows:

- `topic`: the current topic's turns (the closing turn's topic is the whole conference),
  optionally only the last `turns` of them (what `limits.context_messages` meant);
- `turns`: the last `turns` turns of the conference;
- `budget`: the latest turn always; then the conclusion of each finished topic (the turns of its
  last round: the participants' final words and the decision that closed it), newest topic
  first, each whole or not at all; then earlier turns, newest first, while the estimated tokens
  of the task and everything shown stay within `tokens`.

Every window starts with the task message. The assessor's turns (moot's measurement of reference
coverage) are never shown to anyone. Where turns are left out, one `Left` entry says how many.
This module only chooses the entries; the prompt builder renders them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, Optional, Sequence, Union

from moot.agents.prompts import inset

if TYPE_CHECKING:
    from moot.protocols.conference.schema import ContextWindow

TASK = "task"
UNSEEN = ("assess",)  # actions no agent is shown
CONCLUDING = ("speak", "judge", "decide")  # the turns of a topic's last round that conclude it


@dataclass(frozen=True)
class Said:
    """One thing said in the conference, as the other agents read it."""

    speaker: str
    text: str
    action: str = TASK
    topic: Optional[int] = None
    round: int = 0
    turn: int = 0  # the turn's number in the conference (0: the task message)
    decision: Optional[str] = None  # a judge's or deciding moderator's routing decision


@dataclass(frozen=True)
class Left:
    """`count` turns left out here."""

    count: int


Shown = Union[Said, Left]


def estimate_tokens(text: str) -> int:
    """Tokens of `text` estimated as characters / 4, rounded up (OpenAI's rule of thumb for
    English): no tokenizer is downloaded, and a budget is a guide, not a hard bound."""
    return -(-len(text) // 4)


def line_of(said: Said, labels: Optional[Mapping[str, str]] = None) -> str:
    """How an entry reads in a prompt: `Speaker: text` (the speaker's label when given); a turn's
    further lines indented (moot.agents.prompts.inset: a turn cannot forge another's), the task
    (the scenario's own words) as written."""
    text = said.text if said.action == TASK else inset(said.text)
    return f"{(labels or {}).get(said.speaker, said.speaker)}: {text}"


def context_window(history: Sequence[Said], topic: Optional[int], window: "ContextWindow",
                   count: Callable[[str], int] = estimate_tokens) -> list[Shown]:
    """What an agent about to speak on `topic` (None: the closing) is shown of `history` (the task
    first, then every turn in order), under `window` (see the module docstring)."""
    task, turns = history[0], [s for s in history[1:] if s.action not in UNSEEN]
    if window.window == "conference":
        kept = set(range(len(turns)))
    elif window.window == "topic":
        kept = _last([i for i, s in enumerate(turns) if topic is None or s.topic == topic], window.turns)
    elif window.window == "turns":
        kept = _last(list(range(len(turns))), window.turns)
    else:
        assert window.tokens is not None  # required by `window: budget` (ContextWindow checks it)
        kept = _budget(turns, topic, window.tokens, count, count(line_of(task)))
    return [task, *_with_gaps(turns, kept)]


def _last(indices: list[int], n: Optional[int]) -> set[int]:
    return set(indices if n is None else indices[-n:])


def _budget(turns: Sequence[Said], topic: Optional[int], tokens: int, count: Callable[[str], int],
            used: int) -> set[int]:
    if not turns:
        return set()
    cost = [count(line_of(s)) for s in turns]
    kept = {len(turns) - 1}
    used += cost[-1]
    for finished in reversed(_finished_topics(turns, topic)):
        part = [i for i in conclusion(turns, finished) if i not in kept]
        if used + sum(cost[i] for i in part) <= tokens:
            kept.update(part)
            used += sum(cost[i] for i in part)
    for i in range(len(turns) - 2, -1, -1):
        if i in kept:
            continue
        if used + cost[i] > tokens:
            break
        kept.add(i)
        used += cost[i]
    return kept


def _finished_topics(turns: Sequence[Said], topic: Optional[int]) -> list[int]:
    seen = sorted({s.topic for s in turns if s.topic is not None})
    return [t for t in seen if topic is None or t < topic]


def conclusion(turns: Sequence[Said], topic: int) -> list[int]:
    """Indices of the turns that conclude a finished topic: its last round's participant turns and
    the decision that closed it."""
    rounds = [s.round for s in turns if s.topic == topic and s.action in CONCLUDING]
    last = max(rounds, default=0)
    return [i for i, s in enumerate(turns) if s.topic == topic and s.round == last and s.action in CONCLUDING]


def _with_gaps(turns: Sequence[Said], kept: set[int]) -> list[Shown]:
    shown: list[Shown] = []
    gap = 0
    for i, said in enumerate(turns):
        if i not in kept:
            gap += 1
            continue
        if gap:
            shown.append(Left(gap))
            gap = 0
        shown.append(said)
    if gap:
        shown.append(Left(gap))
    return shown
