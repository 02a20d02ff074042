"""The debate's vote: the plurality of the last round's parsed answers, a tie settled by `tie:`."""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from moot.kit import UNPARSED
from moot.protocols.debate.schema import Tie


def vote(answers: Sequence[Sequence[str]], tie: Tie) -> tuple[str, str, str]:
    """(label, explanation, decided_by) from each round's labels, in agent order.

    The label most agents gave in the last round wins; `unparsed` answers do not vote, and no
    parsed answer at all is `unparsed`. A tie between labels is settled by `tie`:
    `unparsed` (no label is claimed), `first_agent` (the tied label the lowest-numbered agent
    gave: Du et al.'s code), or `previous_rounds` (the tied label with most votes in the latest
    earlier round that separates them; still tied after round 0: unparsed).
    """
    last, r = answers[-1], len(answers) - 1
    said = f"after round {r}: {', '.join(last)}"
    counts = Counter(lab for lab in last if lab != UNPARSED)
    if not counts:
        return UNPARSED, f"no parseable answer {said}", "no_answer"
    top = max(counts.values())
    tied = [lab for lab in dict.fromkeys(last) if counts.get(lab) == top]  # first given first
    if len(tied) == 1:
        kind = "majority" if 2 * top > len(last) else "plurality"
        return tied[0], f"{kind} {top} of {len(last)} {said}", kind
    split = f"tie {'-'.join(str(top) for _ in tied)} between {', '.join(tied)} {said}"
    if tie == "first_agent":
        return tied[0], f"{split}; the first agent's: {tied[0]}", "tie_first_agent"
    if tie == "previous_rounds":
        for earlier in range(r - 1, -1, -1):
            before = Counter(lab for lab in answers[earlier] if lab in tied).most_common()
            if before and (len(before) == 1 or before[0][1] > before[1][1]):
                return before[0][0], f"{split}; round {earlier} favoured {before[0][0]}", "tie_previous_rounds"
    return UNPARSED, f"{split}; no label claimed (tie: {tie})", "tie"
