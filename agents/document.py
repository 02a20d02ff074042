"""A document a base model continues, turn by labelled turn: what every protocol's document form shares.

A base model (the embedded Gemma 3 270M) was never trained to follow a chat template: it continues
text. So a role of any protocol, on a base model, continues a document (issue 11 FINDINGS §2): a
short prose header, then the turns so far as `Label: text` paragraphs (an item protocol's turn on
one line, the conference's further lines indented: no turn can write a line that reads as another
speaker's) with stage directions in brackets, ending with the speaker's label. The conference keeps one transcript document
(moot.agents.conference.document); an item protocol keeps one per item (moot.protocols.items.document).

What a turn may write is bounded as measured there: it stops at a blank line, an opening bracket
or any speaker's label, may not open with a newline, a name or an opening bracket or quote,
writes at least MIN_TOKENS tokens, never copies NO_REPEAT words in a row from the document, and
ends at its last complete sentence. A closed answer is a `Choose` branch off the same document.
"""

from __future__ import annotations

from typing import Sequence

from moot.kit import Choose, Continue

MIN_TOKENS = 20  # shorter turns were "Yes." and "Thank you."
NO_REPEAT = 7  # word tokens: without it half the turns copied 8+ words of an earlier one
OPENERS = ("(", '"', "[", "*", "'", "\u201c", "\u2018")  # a turn opening with one of these goes on as a quote or a stage
# direction ("(speaking in a low voice) ..."), and the habit spreads from turn to turn


def stops(called: Sequence[str]) -> tuple[str, ...]:
    """Where a turn ends: a blank line, a stage direction, or anyone's label (a line of another
    speaker, or a label in mid-line); `called`: every name and label of the speakers."""
    return tuple(dict.fromkeys(["\n\n", "[", *(f"\n{c}" for c in called), *(f"{c}:" for c in called)]))


def turn_request(document: str, label: str, called: Sequence[str], opening: str = "") -> Continue:
    """The request for the turn of the speaker labelled `label` after `document`: it may not open
    with a name (a roster) or an opening bracket or quote, nor copy runs of the document's words.
    `opening`: the words the turn begins with (written after the label, part of the turn)."""
    prefix = f"{label}: {opening}" if opening else f"{label}:"
    return Continue(document=True, prefix=prefix, stop=stops(called), min_tokens=MIN_TOKENS,
                    ban_first=(*called, *OPENERS), no_repeat_ngram=NO_REPEAT, reference=document)


def choice_request(prefix: str, options: Sequence[str]) -> Choose:
    """A closed answer branching off a document: the option most likely after `prefix` and a space."""
    return Choose(document=True, options=tuple(options), prefix=prefix, sep=" ")
