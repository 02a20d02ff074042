"""Decision-conference roles built into AutoGen agents.

Each agent keeps the group chat thread it has seen, asks the speaker-selection policy what
its turn is for (open a topic, speak, judge, evaluate, assess, ...), renders that turn's prompt
from templates and what it is shown (`shown`: its context window, conference_context; the
assessor's debate, conference_coverage), asks its model through the unit's context (the run's
model-call engine: cache, retries, concurrency) and returns a TextMessage whose metadata carries
the turn's place (topic, round, action), its decision (conference_reading), usage and latency. The policy only ever reads that
metadata, never the text. The call's record waits in `last_call` for the turn to be written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_core import CancellationToken
from autogen_core.models import LLMMessage, RequestUsage, SystemMessage, UserMessage

from moot.agents.conference_context import Left, Said, Shown, context_window, line_of
from moot.agents.conference_coverage import debate_of, reference_text
from moot.agents.conference_reading import Reading
from moot.agents.prompts import render
from moot.agents.thread import ThreadAgent
from moot.speaker_selection.conference import ConferencePlan, Step, Turn, walk
from moot.verdicts import CRITERIA, CRITERIA_TEXT, coverage_model

USER = "user"
CONVERSATION, DEBATE = "Conversation so far:", "The participants' debate:"  # the headings of what is shown


@dataclass(frozen=True)
class ConferenceSetup:
    """Everything a conference agent needs besides its model: the plan, texts and templates."""

    plan: ConferencePlan
    title: str
    task: str
    topics: tuple[str, ...]
    templates: Mapping[str, str]
    window: Any  # the scenario's ContextWindow (what each agent is shown)
    reading: Reading = Reading()  # how the judge answers and what the others learn from it
    references: Mapping[int, Sequence[Any]] = field(default_factory=dict)  # topic -> reference items

    def output(self, step: Step) -> Optional[type]:
        """The structured output a turn asks for (None: free text)."""
        if step.action == "assess":
            return coverage_model(tuple(i.name for i in self.references[step.topic]))
        return self.reading.output(step.action)


def to_turns(thread: Sequence[object]) -> list[Turn]:
    """The policy's view of an AutoGen thread: chat messages after the task, speaker + decision."""
    chat = [m for m in thread if isinstance(m, BaseChatMessage) and m.source != USER]
    return [Turn(m.source, m.metadata.get("decision")) for m in chat]


class ConferenceAgent(ThreadAgent):
    """One conference role (moderator, participant, judge, evaluator or assessor) played by one model."""

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
        output = self.setup.output(step)
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
            metadata=turn_metadata(step, self.role, self.setup.reading.decision(step.action, done.text), call.model,
                                   latency_s=call.latency_s, calls=max(call.attempts, 1)),
        )

    def prompt_for(self, step: Step, steps: Sequence[Step]) -> list[LLMMessage]:
        """System prompt (who I am) + one user message (what I am shown of the conversation + my
        task now)."""
        fields = self.fields(step)
        instruction = render(self.setup.templates[self.setup.reading.template(self.role, step.action)], fields)
        heading = DEBATE if step.action == "assess" else CONVERSATION
        return turn_prompt(render(self.system_template, fields), heading, self.shown(step, steps), instruction)

    def shown(self, step: Step, steps: Sequence[Step]) -> list[Shown]:
        """What this agent is shown of the conversation so far: the scenario's context window; the
        assessor, the participants' turns on the topic it assesses."""
        history = self.history(steps)
        if step.action == "assess":
            return list(debate_of(history, step.topic))
        return context_window(history, step.topic, self.setup.window)

    def history(self, steps: Sequence[Step]) -> list[Said]:
        """The task message, then every turn so far as the others read it."""
        task = next((m.content for m in self._thread if m.source == USER), "")
        chat = [m for m in self._thread if m.source != USER]
        return [Said("Task", task)] + [said_of(m, s, n, self.setup.reading)
                                      for n, (m, s) in enumerate(zip(chat, steps), 1)]

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
            "reference": reference_text(s.references.get(step.topic, ())),
        }

    def last_judge_reason(self) -> str:
        """The judge's latest turn as the others read it; empty when its reason is not forwarded."""
        judge, reading = self.setup.plan.judge, self.setup.reading
        last = next((m for m in reversed(self._thread) if m.source == judge), None)
        return reading.display("judge", last.content) if last and reading.forward_reason else ""


def said_of(message: BaseChatMessage, step: Step, turn: int, reading: Reading) -> Said:
    """A turn as the other agents read it."""
    return Said(message.source, reading.display(step.action, message.content), step.action, step.topic, step.round,
                turn)


def turn_prompt(system: str, heading: str, shown: Sequence[Shown], instruction: str) -> list[LLMMessage]:
    """A turn's messages: the system prompt, then one user message with what the agent is shown
    (under `heading`) and its instruction."""
    history = render_shown(shown)
    body = f"{heading}\n{history}\n\n{instruction}" if history else instruction
    return [SystemMessage(content=system), UserMessage(content=body, source=USER)]


def render_shown(shown: Sequence[Shown]) -> str:
    """The entries of a context window as prompt text, one paragraph each."""
    return "\n\n".join(f"({e.count} earlier turn(s) not shown)" if isinstance(e, Left) else line_of(e)
                       for e in shown)


def turn_metadata(step: Step, role: str, decision: Optional[str], model: str, *, latency_s: float = 0.0,
                  calls: int = 1) -> dict[str, str]:
    """AutoGen message metadata (string values) describing a turn; transcripts store the same."""
    meta = {"role": role, "action": step.action, "round": str(step.round), "model": model,
            "latency_s": f"{latency_s:.3f}", "calls": str(calls)}
    if step.topic is not None:
        meta["topic"] = str(step.topic)
    if decision:
        meta["decision"] = decision
    return meta
