"""The conference as one transcript document, the way a base model is prompted.

A base model (the embedded Gemma 3 270M) was never trained to follow a chat template: it
continues text. So each of its free-text turns continues ONE document all speakers share (issue
11 FINDINGS §2): a prose header (title, task, who is who, the agenda), then the conversation as
`Label: text` paragraphs (a turn's further lines indented, so no turn can write a line that reads
as another speaker's: moot.agents.prompts.inset) with stage directions in brackets where a topic
opens, a round ends or the conference closes, ending with the speaker's label. The judge's, the deciding moderator's and
the evaluator's questions are short branches off the same document. The document only ever
grows, so llama.cpp keeps its evaluated prefix and a turn evaluates only its new tokens (FINDINGS
§3: 98 % of prompt tokens reused), as long as the context window shows the whole conference.

What a turn may write is bounded as measured there, the same for every protocol's document
(moot.agents.document): it stops at a blank line or any speaker's label, may not open with a
newline or a name, writes a minimum of tokens, never copies a run of words from the document, and
ends at its last complete sentence.

Every paragraph is rendered from the conversation alone (what each turn said and decided), so
every speaker, and a resumed run, builds the same document. The templates are the scenario's
`document_*` prompts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

from moot.agents.conference.context import TASK, Left, Said, Shown, line_of
from moot.agents.conference.coverage import NO, YES, item_text
from moot.agents.document import choice_request, stops, turn_request
from moot.agents.prompts import render
from moot.kit import Choose, Continue, Score
from moot.speaker_selection.conference import AGREEMENT, NEXT_TOPIC

if TYPE_CHECKING:
    from moot.agents.conference.setup import ConferenceSetup

SPOKEN = ("open", "continue", "speak", "close", "decide")  # turns that are a line of the transcript
AGREE, DISAGREE = "agree", "disagree"  # the judge's options, after its question
MOVE_ON, CONTINUE = "move", "continue"  # the deciding moderator's (" move on", " continue")
ARTICLES = ("A ", "An ", "The ")
COUNTS = {3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}


def all_of(count: int) -> str:
    """`both`, `all three`, ..., `all 12`: the participants as a group."""
    return "both" if count == 2 else f"all {COUNTS.get(count, count)}"


def noun_phrase(persona: str) -> str:
    """A persona as it continues `<label> is ...`: a leading article lowercased, a full stop."""
    text = " ".join(persona.split())
    if text.startswith(ARTICLES):
        text = text[0].lower() + text[1:]
    return text if text.endswith((".", "!", "?")) else f"{text}."


class TranscriptDocument:
    """Renders a conference's document from its setup and what was said (see the module docstring)."""

    def __init__(self, setup: "ConferenceSetup"):
        self.setup = setup

    def label(self, name: str) -> str:
        return self.setup.label(name)

    def fields(self, topic: Optional[int] = None, round_: int = 1, **more: object) -> dict[str, object]:
        s = self.setup
        fields: dict[str, object] = {
            "title": s.title.rstrip("."), "task": s.task, "topic_count": len(s.topics),
            "max_rounds": s.plan.max_rounds, "round": round_,
            "participants": s.participants(),
            "all": all_of(len(s.plan.participants)),
            "topic_number": (topic or 0) + 1, "topic": s.topics[topic] if topic is not None else "",
        }
        return {**fields, **more}

    def direction(self, key: str, topic: Optional[int] = None, round_: int = 1, **more: object) -> str:
        return render(self.setup.templates[f"document_{key}"], self.fields(topic, round_, **more))

    def header(self) -> str:
        return self.direction("header", cast=self.cast(), agenda=self.agenda())

    def agenda(self) -> str:
        """`(1) first topic; (2) second topic`."""
        return "; ".join(f"({n}) {t}" for n, t in enumerate(self.setup.topics, 1))

    def cast(self) -> str:
        """Who is who, as sentences: `The moderator is ... Dr. Weber is ...`."""
        plan, personas = self.setup.plan, self.setup.personas
        moderator = self.label(plan.moderator)
        lines = []
        persona = personas.get(plan.moderator, "")
        if persona:
            who = "The moderator" if moderator == "Moderator" else f"The moderator, {moderator},"
            lines.append(f"{who} is {noun_phrase(persona)}")
        elif moderator != "Moderator":
            lines.append(f"The moderator is {moderator}.")
        for name in plan.participants:
            persona = personas.get(name, "")
            who = self.label(name)
            lines.append(f"{who} is {noun_phrase(persona)}" if persona else f"{who} takes part.")
        return " ".join(lines)

    # ------------------------------------------------------------------ the conversation
    def paragraphs(self, shown: Sequence[Shown]) -> list[str]:
        """The header and the conversation shown, one paragraph each."""
        found = [self.header()]
        for entry in shown:
            if isinstance(entry, Left):
                found.append(self.direction("left", count=entry.count))
            elif entry.action != TASK:
                found += self.turn(entry)
        return found

    def turn(self, said: Said) -> list[str]:
        """A turn's paragraphs: the direction before it, its line, the direction after it."""
        found = self.lead_in(said.action, said.topic, said.round, said.decision)
        if said.action in SPOKEN:
            found.append(line_of(said, self.setup.labels))
        if said.action == "judge":
            found.append(self.judged(said.decision, said.topic, said.round))
        return found

    def lead_in(self, action: str, topic: Optional[int], round_: int, decision: Optional[str] = None) -> list[str]:
        """The stage direction a turn of `action` follows (none for most)."""
        if action == "open":
            return [self.direction("open", topic)]
        if action == "close":
            return [self.direction("close")]
        if action == "decide":
            if decision == NEXT_TOPIC:
                return [self.direction("next_topic", topic, round_)]
            at_cap = round_ >= self.setup.plan.max_rounds
            return [self.direction("round_cap" if at_cap else "more_debate", topic, round_)]
        return []

    def judged(self, decision: Optional[str], topic: Optional[int], round_: int) -> str:
        """What a judge's verdict means for the conversation, as a stage direction."""
        if decision == AGREEMENT:
            return self.direction("agreement", topic, round_)
        if round_ >= self.setup.plan.max_rounds:
            return self.direction("round_cap", topic, round_)
        return self.direction("continue", topic, round_ + 1)

    def text(self, shown: Sequence[Shown], *more: str) -> str:
        """The document: the conversation shown, then `more` paragraphs."""
        return "\n\n".join([*self.paragraphs(shown), *more])

    # ------------------------------------------------------------------ what a turn asks
    def called(self) -> list[str]:
        """Every name and label of the conference's agents."""
        labels = self.setup.labels
        return list(dict.fromkeys([*labels.values(), *labels]))

    def stops(self) -> tuple[str, ...]:
        """Where a turn ends: a blank line, a stage direction, or anyone's label."""
        return stops(self.called())

    def continuation(self, document: str, speaker: str) -> Continue:
        """The request for `speaker`'s line after `document` (moot.agents.document.turn_request)."""
        return turn_request(document, self.label(speaker), self.called())

    def judge_choice(self, judge: str) -> Choose:
        """The judge's question after the round: do the participants agree or disagree?"""
        prefix = render(self.setup.templates["document_judge"], self.fields(name=self.label(judge)))
        return choice_request(prefix, (AGREE, DISAGREE))

    def decide_choice(self, moderator: str, topic: Optional[int], round_: int) -> Choose:
        """The deciding moderator's question: move on, or continue?"""
        fields = self.fields(topic, round_, name=self.label(moderator))
        return choice_request(render(self.setup.templates["document_decide"], fields), (MOVE_ON, CONTINUE))

    def assessed(self, debate: Sequence[Said], topic: int) -> str:
        """The assessor's document: the participants' turns on `topic` (nothing else of the
        conference, as for a structured assessor), between two directions."""
        lines = [line_of(s, self.setup.labels) for s in debate]
        return "\n\n".join([self.direction("assess_debate", topic), *lines, self.direction("assess", topic)])

    def assess_choice(self, item: Any) -> Choose:
        """Did the debate address this reference item? (yes / no)"""
        return choice_request(self.item_line(item), (YES, NO))

    def quote(self, item: Any) -> Continue:
        """The passage of the debate that addresses the item, after a yes: copied, so no n-gram ban;
        it ends at the closing quotation mark."""
        return Continue(document=True, prefix=f"{self.item_line(item)} {YES}\n{self.setup.templates['document_quote']}",
                        stop=('"', "\n"), sentence=False)

    def item_line(self, item: Any) -> str:
        return render(self.setup.templates["document_assess_item"], {"item": item_text(item)}).rstrip("\n")

    def score(self, topic: Optional[int], criterion: str, question: str) -> Score:
        """One criterion's score, after the evaluation direction."""
        asked = render(self.setup.templates["document_criterion"],
                       self.fields(topic, criterion=criterion, criterion_text=question))
        return Score(document=True, lo=1, hi=10, prefix=f"{self.direction('evaluate', topic)}\n{asked}", sep=" ")
