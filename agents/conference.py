"""Decision-conference roles built into AutoGen agents.

Each agent keeps the group chat thread it has seen, asks the speaker-selection policy what
its turn is for (open a topic, speak, judge, evaluate, ...), renders that turn's prompt from
templates, asks its model through the unit's context (the run's model-call engine: cache,
retries, concurrency) and returns a TextMessage whose metadata carries the turn's place (topic,
round, action), its structured decision, usage and latency. The policy only ever reads that
metadata, never the text. The call's record waits in `last_call` for the turn to be written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_core import CancellationToken
from autogen_core.models import LLMMessage, RequestUsage, SystemMessage, UserMessage

from moot.agents.prompts import render
from moot.agents.thread import ThreadAgent
from moot.verdicts import CRITERIA, CRITERIA_TEXT, EvaluatorScores, JudgeVerdict, ModeratorDecision, parse_reply
from moot.speaker_selection.conference import UNPARSED, ConferencePlan, Step, Turn, walk

OUTPUT_OF_ACTION = {"judge": JudgeVerdict, "decide": ModeratorDecision, "evaluate": EvaluatorScores}
USER = "user"


@dataclass(frozen=True)
class ConferenceSetup:
    """Everything a conference agent needs besides its model: the plan, texts and templates."""

    plan: ConferencePlan
    title: str
    task: str
    topics: tuple[str, ...]
    templates: Mapping[str, str]
    context_messages: int = 12


def to_turns(thread: Sequence[object]) -> list[Turn]:
    """The policy's view of an AutoGen thread: chat messages after the task, speaker + decision."""
    chat = [m for m in thread if isinstance(m, BaseChatMessage) and m.source != USER]
    return [Turn(m.source, m.metadata.get("decision")) for m in chat]


def display_text(action: str, content: str) -> str:
    """How a turn reads to the other agents and on screen: decisions in words, not raw JSON."""
    output = OUTPUT_OF_ACTION.get(action)
    if output is None:
        return content.strip()
    parsed = parse_reply(output, content).value
    if parsed is None:
        return f"(unparsed reply) {content.strip()}"
    if isinstance(parsed, JudgeVerdict):
        return f"{parsed.verdict}: {parsed.reason}".rstrip(": ")
    if isinstance(parsed, ModeratorDecision):
        return parsed.message
    scores = ", ".join(f"{c}={getattr(parsed, c)}" for c in CRITERIA)
    return f"Scores: {scores}; overall={parsed.overall}. {parsed.rationale}"


def decision_of(action: str, content: str) -> Optional[str]:
    """The routing decision of a judge/deciding-moderator turn; UNPARSED when unreadable."""
    output = OUTPUT_OF_ACTION.get(action)
    if output not in (JudgeVerdict, ModeratorDecision):
        return None
    parsed = parse_reply(output, content).value
    if parsed is None:
        return UNPARSED
    return parsed.verdict if isinstance(parsed, JudgeVerdict) else parsed.decision


class ConferenceAgent(ThreadAgent):
    """One conference role (moderator, participant, judge or evaluator) played by one model."""

    def __init__(self, name: str, role: str, persona: str, ctx, setup: ConferenceSetup,
                 system_template: Optional[str] = None):
        super().__init__(name, f"{role} of the conference")
        self.role, self.persona, self.ctx, self.setup = role, persona, ctx, setup
        self.system_template = system_template or setup.templates[f"{role}_system"]
        self.failure: Optional[Exception] = None  # kept so the runner sees the real cause (not AutoGen's text)
        self.last_call = None  # the Reply of this agent's latest turn, until the turn is recorded

    async def reply(self, cancellation_token: CancellationToken) -> TextMessage:
        steps = walk(self.setup.plan, to_turns(self._thread))
        step = steps[-1]
        if step.speaker != self.name:
            raise RuntimeError(f"{self.name} was asked to speak but the policy expects {step.speaker}")
        prompt = self.prompt_for(step, steps)
        output = OUTPUT_OF_ACTION.get(step.action)
        try:
            done = await self.ctx.call(self.name, prompt, output, stage=step.action, record=False)
        except Exception as exc:  # noqa: BLE001 - a failed call, or a disk refusing its cache write
            self.failure = exc
            raise
        self.last_call = done
        call = done.call
        return TextMessage(
            content=done.text, source=self.name,
            models_usage=RequestUsage(prompt_tokens=call.usage.prompt_tokens,
                                      completion_tokens=call.usage.completion_tokens),
            metadata=turn_metadata(step, self.role, done.text, call.model, latency_s=call.latency_s,
                                   calls=max(call.attempts, 1)),
        )

    def prompt_for(self, step: Step, steps: Sequence[Step]) -> list[LLMMessage]:
        """System prompt (who I am) + one user message (the current topic so far + my task now)."""
        fields = self.fields(step)
        history = self.topic_history(step, steps)
        instruction = render(self.setup.templates[f"{self.role}_{_template_suffix(step.action)}"], fields)
        body = f"Conversation so far:\n{history}\n\n{instruction}" if history else instruction
        return [SystemMessage(content=render(self.system_template, fields)),
                UserMessage(content=body, source=USER)]

    def topic_history(self, step: Step, steps: Sequence[Step]) -> str:
        """Lines of the current topic's turns (the last `context_messages` of them)."""
        chat = [m for m in self._thread if m.source != USER]
        topic = step.topic if step.topic is not None else None
        lines = [f"{m.source}: {display_text(s.action, m.content)}"
                 for m, s in zip(chat, steps) if topic is None or s.topic == topic]
        return "\n\n".join(lines[-self.setup.context_messages:])

    def fields(self, step: Step) -> dict[str, object]:
        s, plan = self.setup, self.setup.plan
        topic = s.topics[step.topic] if step.topic is not None else ""
        return {
            "name": self.name, "persona": self.persona, "title": s.title, "task": s.task,
            "topic": topic, "topic_number": (step.topic or 0) + 1, "topic_count": len(s.topics),
            "round": step.round, "max_rounds": plan.max_rounds,
            "participants": ", ".join(plan.participants),
            "topics": "\n".join(f"{i}. {t}" for i, t in enumerate(s.topics, 1)),
            "judge_reason": self.last_judge_reason(),
            "criteria": "\n".join(f"- {c}: {CRITERIA_TEXT[c]}" for c in CRITERIA),
        }

    def last_judge_reason(self) -> str:
        judge = self.setup.plan.judge
        last = next((m for m in reversed(self._thread) if m.source == judge), None)
        return display_text("judge", last.content) if last else ""


def _template_suffix(action: str) -> str:
    return {"speak": "turn", "judge": "turn", "evaluate": "turn"}.get(action, action)


def turn_metadata(step: Step, role: str, content: str, model: str, *, latency_s: float = 0.0,
                  calls: int = 1) -> dict[str, str]:
    """AutoGen message metadata (string values) describing a turn; transcripts store the same."""
    meta = {"role": role, "action": step.action, "round": str(step.round), "model": model,
            "latency_s": f"{latency_s:.3f}", "calls": str(calls)}
    if step.topic is not None:
        meta["topic"] = str(step.topic)
    decision = decision_of(step.action, content)
    if decision:
        meta["decision"] = decision
    return meta
