"""S2MAD's document form: what each role continues on a base model (moot.protocols.items.document).

Every role's document starts with the post (`document_header`). The scorer is asked about one
reply at a time; the classifier about the post alone; a debater sees its own stance set of replies
(`document_comments`), the debate so far (its own and the other agent's turns, each with its
verdict line), and a direction; the judge sees both agents' last turns; the one agent of w/o Debate
and the vanilla baseline sees every reply it is given. A verdict is read from a short document of
its own: the post and the role's turn. Each document is built from the item's content
(`Content`), so the same document around a content-free input (calibration) is the same function
of replaced content.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence

from moot.agents.prompts import render
from moot.protocols.items.document import ItemDocument, labelled

P, N, JUDGE, AGENT = "debater_p", "debater_n", "judge", "agent"
LABEL_KEYS = {P: "label_p", N: "label_n", JUDGE: "label_judge", AGENT: "label_agent"}


@dataclass(frozen=True)
class Said:
    """A turn as the document shows it: who, what, and the label its verdict line gave (None: none)."""

    role: str
    text: str
    label: Optional[str] = None


@dataclass(frozen=True)
class Content:
    """What of an item a document shows: the post, the replies a role read, the turns so far."""

    claim: str
    comments: tuple[str, ...] = ()
    turns: tuple[Said, ...] = ()



Build = Callable[["Content"], ItemDocument]  # a role's document around (some) content


class ClaimDocuments:
    """The document of each role of one claim, from the scenario's `document_*` templates."""

    def __init__(self, templates: Mapping[str, str]):
        self.templates = templates
        self.names = {role: render(templates[key], {}) for role, key in LABEL_KEYS.items()}

    def _start(self, content: Content) -> ItemDocument:
        return ItemDocument((render(self.templates["document_header"], {"claim": content.claim}),),
                            tuple(self.names.values()))

    def reply(self, content: Content) -> ItemDocument:
        """The scorer's: the post, then the one reply (`content.comments[0]`)."""
        return self._start(content).then(render(self.templates["document_reply"], {"comment": content.comments[0]}))

    def claim(self, content: Content) -> ItemDocument:
        """The classifier's: the post alone."""
        return self._start(content)

    def opinion(self, role: str, content: Content, round: int = 0) -> ItemDocument:
        """A debater's (or the one agent's) document in round `round`: the replies it read, the
        turns so far, then the round's direction."""
        t, name = self.templates, self.names[role]
        comments = render(t["document_comments"], {"agent": name, "comments": "\n".join(content.comments) or "(none)"})
        direction = "document_opinion" if round == 0 else "document_debate"
        return self._start(content).then(comments, *self.turns(content.turns),
                                         render(t[direction], {"agent": name, "round": round + 1}))

    def opinion_of(self, role: str, round: int = 0) -> Build:
        """`opinion` for `role` and `round`, as a function of the content."""
        return lambda content: self.opinion(role, content, round)

    def judged(self, content: Content) -> ItemDocument:
        """The judge's: both agents' last turns, then its direction."""
        return self._start(content).then(*self.turns(content.turns), render(self.templates["document_judge"], {}))

    def turns(self, turns: Sequence[Said]) -> list[str]:
        """Each turn and its verdict line."""
        found = []
        for turn in turns:
            found.append(labelled(self.names[turn.role], turn.text))
            if turn.label:
                found.append(f"{self.verdict(turn.role)} {turn.label}.")
        return found

    def verdict_document(self, role: str, claim: str, turn: str) -> ItemDocument:
        """What a role's verdict is read from: the post, then its turn."""
        return self._start(Content(claim)).then(labelled(self.names[role], turn))

    def opening(self, role: str) -> str:
        """The words a role's turn begins with: the judge's (`opening_judge`), else `opening`."""
        return render(self.templates["opening_judge" if role == JUDGE else "opening"], {})

    def verdict(self, role: str) -> str:
        """The line a role's verdict (a label) follows."""
        return render(self.templates["document_verdict"], {"agent": self.names[role]})
