"""What people rate blind in a finished conference (`moot annotate`): the judge's verdict after
each round, shown the topic's debate up to it, and the evaluator's ten criteria (1-10), shown the
topic's debate. The material leaves out every verdict and score, so the rater answers before
seeing the model's; a turn a person gave at a seat (`--human`) is no model's answer to rate.
In a run whose judge decisions a grader graded (`moot score --role grader=SPEC`, Heller et al.
Table 5), each decision is also rated 1-10 as the grader did, shown the debate and the decision
(the grader's grade is hidden): `moot report` then has Table 5's shape with the people's grades."""

from __future__ import annotations

from typing import Optional

from moot.contract.rating import Rateable
from moot.kit import Message, Question, Transcript
from moot.protocols.conference.events import Score, Verdict
from moot.protocols.conference.verdicts import CRITERIA, CRITERIA_TEXT, criterion_title, score_text
from moot.speaker_selection.conference import AGREEMENT, MORE_DEBATE

DEBATING = ("open", "continue", "speak")  # the turns a verdict or a score is about
VERDICT, SCORES, GRADE = "verdict", "scores", "grade"
GRADED = "correctness_format"  # the grader's one criterion (moot.protocols.conference.rescore)


def debate_text(transcript: Transcript, topic: Optional[int], upto: int) -> str:
    """The topic's debate before turn `upto`, one `Speaker: text` paragraph per turn."""
    turns = [m for m in transcript.messages if m.part == topic and m.action in DEBATING and m.turn < upto]
    return "\n\n".join(f"[R{m.round}] {m.speaker}: {m.content.strip()}" for m in turns)


def rateables(transcript: Transcript) -> tuple[Rateable, ...]:
    """Each judge verdict (not a deciding moderator's) and each debate's scores, in turn order."""
    by_turn: dict[int, Message] = {m.turn: m for m in transcript.messages}
    grades = {s.turn: s for s in transcript.of_type(Score) if s.kind == "judge_decision"}
    found: list[Rateable] = []
    for event in transcript.events:
        said = by_turn.get(getattr(event, "turn", -1))
        if said is None or said.source == "human":
            continue
        topic = getattr(event, "topic", None)
        where = f"T{topic + 1}" if isinstance(topic, int) else "closing"
        if isinstance(event, Verdict) and said.action == "judge":
            question = Question(VERDICT, "Have the participants reached agreement?", (AGREEMENT, MORE_DEBATE))
            answer = event.verdict if event.verdict in (AGREEMENT, MORE_DEBATE) else None
            debate = debate_text(transcript, event.topic, event.turn)
            found.append(Rateable(f"{where} R{event.round} {VERDICT}", VERDICT, debate, (question,), {VERDICT: answer},
                                  said.model, where))
            grade = grades.get(event.turn)
            if grade is not None:
                found.append(Rateable(f"{where} R{event.round} {GRADE}", GRADE,
                                      f"{debate}\n\nThe judge's decision: {said.content.strip()}",
                                      (Question(GRADED, "How correct is the judge's decision, and its format?",
                                                scale=(1, 10)),),
                                      {GRADED: score_text(grade.overall) if grade.parsed and grade.overall else None},
                                      grade.model, where))
        elif isinstance(event, Score) and event.kind == "debate":
            questions = tuple(Question(c, f"{criterion_title(c)}: {CRITERIA_TEXT[c]}", scale=(1, 10)) for c in CRITERIA)
            expected = bool(event.distributions)
            answers = {c: score_text(event.scores[c], expected) if c in event.scores else None for c in CRITERIA}
            found.append(Rateable(f"{where} {SCORES}", SCORES, debate_text(transcript, event.topic, event.turn),
                                  questions, answers, said.model, where))
    return tuple(found)
