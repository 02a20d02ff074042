"""A deterministic model for tests and demos, with the same interface as the real backends.

It answers in role: plain turns get a short reply naming the speaker and topic it was asked
about; structured requests (judge verdict, moderator decision, evaluator scores) get a valid
object whose label comes from a script (any other structured output: see labelled_reply). Free-text
replies to a prompt carrying `SCRIPTED_LABEL=<label>` end with a decisive "Answer: <label>" line
("Decision: <label>" when the prompt asks for "Decision:"), so per-item protocols (S2MAD,
negotiation) get known predictions from a marked test dataset. Script tokens: AGREEMENT, MORE_DEBATE, NEXT_TOPIC,
GARBAGE (an unparseable reply), EMPTY (an empty reply) and FAIL (a connection error); a free-text
prompt asking for "AGREEMENT or MORE DEBATE" (the paper's plain-text judge) takes the same script
and answers in words ("MORE DEBATE"); BASE makes it present itself as a base model (`model_kind`).
After the script runs out, decisions are AGREEMENT / NEXT_TOPIC. A conference's
coverage assessor gets, per reference item, the first sentence of the debate it was shown that
names the item (as a word) as its quote, else "not covered". Every request is recorded in
`requests` so tests can assert exactly what each agent was shown.

Continuations, choices and scores (moot.models.requests) are answered by
moot.models.scripted_requests; `create_stream` yields a reply word by word.
"""

from __future__ import annotations

import json
import re
from typing import Any, AsyncGenerator, Iterable, Mapping, Optional, Sequence, Union

from autogen_core.models import CreateResult, LLMMessage, ModelInfo, RequestUsage, UserMessage
from pydantic import BaseModel

from moot.models.base import MootClient
from moot.models.requests import Request, request_of
from moot.models.scripted_requests import answer as scripted_answer
from moot.errors import nearest
from moot.protocols.conference.verdicts import CRITERIA, CoverageReply, EvaluatorScores, JudgeVerdict, ModeratorDecision

SCRIPT_TOKENS = ("AGREEMENT", "MORE_DEBATE", "NEXT_TOPIC", "GARBAGE", "EMPTY", "FAIL", "BASE")
SCRIPTED_INFO = ModelInfo(vision=False, function_calling=False, json_output=True,
                          structured_output=True, family="scripted")


def parse_script(text: Optional[str]) -> list[str]:
    tokens = [t.strip().upper() for t in (text or "").split(",") if t.strip()]
    bad = [t for t in tokens if t not in SCRIPT_TOKENS]
    if bad:
        raise ValueError(f"unknown scripted token {bad[0]!r}{nearest(bad[0], SCRIPT_TOKENS)} "
                         f"(allowed: {', '.join(SCRIPT_TOKENS)})")
    return tokens


class ScriptedChatCompletionClient(MootClient):
    """Deterministic stand-in for a model. `script` drives structured replies and failures;
    `fail_calls` lists 1-based call numbers that raise a ConnectionError (for retry tests)."""

    info = SCRIPTED_INFO
    streams = True

    def __init__(self, script: Iterable[str] = (), fail_calls: Iterable[int] = (), score: int = 7,
                 record: bool = True, max_tokens: int = 256):
        super().__init__()
        script = list(script)
        self.model_kind = "base" if "BASE" in script else "instruct"
        self.script = [t for t in script if t != "BASE"]
        self.max_tokens = max_tokens
        self.record = record  # keep every request (tests read them); off for `--model scripted` runs
        self.fail_calls = set(fail_calls)
        self.score = score
        self.requests: list[dict[str, Any]] = []
        self.calls = 0

    async def create(self, messages: Sequence[LLMMessage], *, tools=(), json_output=None,
                     extra_create_args: Mapping[str, Any] = {}, cancellation_token=None) -> CreateResult:
        self.calls += 1
        request = request_of(extra_create_args)
        if self.record:
            self.requests.append({"messages": list(messages), "output": json_output, "request": request})
        if self.calls in self.fail_calls:
            raise ConnectionError("scripted failure")
        if request is not None:
            return self._answer(messages, request, extra_create_args)
        text = self._reply(messages, json_output)
        prompt = sum(len(str(m.content).split()) for m in messages)
        usage = RequestUsage(prompt_tokens=prompt, completion_tokens=len(text.split()))
        self.add_usage(usage)
        return CreateResult(content=text, usage=usage, finish_reason="stop", cached=False)

    async def create_stream(self, messages: Sequence[LLMMessage], *, tools=(), json_output=None,
                            extra_create_args: Mapping[str, Any] = {},
                            cancellation_token=None) -> AsyncGenerator[Union[str, CreateResult], None]:
        result = await self.create(messages, json_output=json_output, extra_create_args=extra_create_args)
        if isinstance(result.content, str) and json_output is None:
            generated = (getattr(result, "detail", None) or {}).get("uncut") or result.content
            for word in re.findall(r"\s*\S+", generated):  # as generated: before a cut
                yield word
        yield result

    def _answer(self, messages: Sequence[LLMMessage], request: Request, extra: Mapping[str, Any]) -> CreateResult:
        if self.script and self.script[0] == "FAIL" and request.kind != "continue":
            self.script.pop(0)
            raise ConnectionError("scripted failure")
        label, prompt = label_mark(messages)
        marked = SCORE_MARK.search(last_user_text(messages))
        result = scripted_answer(request, messages, self.script, label, option_letter(prompt, label),
                                 float(marked.group(1)) if marked else self.score,
                                 int(extra.get("max_tokens") or self.max_tokens))
        self.add_usage(result.usage)
        return result

    def _reply(self, messages: Sequence[LLMMessage], output: Any) -> str:
        plain_verdict = output is None and bool(PLAIN_VERDICT.search(last_user_text(messages)))
        if output in (JudgeVerdict, ModeratorDecision) or plain_verdict:
            token = self.script.pop(0) if self.script else "AGREEMENT"
            if token == "FAIL":
                raise ConnectionError("scripted failure")
            if token in ("GARBAGE", "EMPTY"):
                return "" if token == "EMPTY" else "I think there is no AGREEMENT yet, maybe DONE?"
            if plain_verdict:
                return "MORE DEBATE" if token == "MORE_DEBATE" else "AGREEMENT"
            if output is JudgeVerdict:
                verdict = "MORE_DEBATE" if token == "MORE_DEBATE" else "AGREEMENT"
                return json.dumps({"verdict": verdict, "reason": f"scripted {verdict.lower()}"})
            decision = "MORE_DEBATE" if token == "MORE_DEBATE" else "NEXT_TOPIC"
            return json.dumps({"decision": decision, "message": f"Moderator: {decision.lower()}."})
        if isinstance(output, type) and issubclass(output, CoverageReply):
            return coverage_reply(output, messages)
        if output is EvaluatorScores:
            scores = {c: self.score for c in CRITERIA}
            return json.dumps({**scores, "overall": self.score, "rationale": "scripted evaluation"})
        if isinstance(output, type) and issubclass(output, BaseModel):
            return labelled_reply(output, messages)
        return self._text_reply(messages)

    @staticmethod
    def _text_reply(messages: Sequence[LLMMessage]) -> str:
        last = last_user_text(messages)
        letter = option_letter(last, label_mark(messages)[0])
        if letter:
            return letter
        ask = last.strip().splitlines()[-1] if last.strip() else ""
        quoted = re.findall(r'"([^"]+)"', ask)
        about = quoted[0] if quoted else ask[:80]
        text = f"(scripted) My contribution on {about}: AGREEMENT is not mine to declare. DONE."
        label, prompt = label_mark(messages)
        if label is None or label == "GARBAGE":
            return text
        marker = "Decision" if re.search(r'\bDecision:', prompt) else "Answer"
        return f"{text}\n{marker}: {label}"


PLAIN_VERDICT = re.compile(r"\bAGREEMENT or MORE DEBATE\b")


def last_user_text(messages: Sequence[LLMMessage]) -> str:
    last = next((m for m in reversed(messages) if isinstance(m, UserMessage)), None)
    return str(last.content) if last else ""


def coverage_reply(output: type[CoverageReply], messages: Sequence[LLMMessage]) -> str:
    """Per item (the output's JSON keys), the first sentence of the debate (the last user message
    but its closing instruction; a leading `Speaker: ` dropped) naming it as a word, else none."""
    debate = last_user_text(messages).rsplit("\n\n", 1)[0]
    sentences = [re.sub(r"^\w+: ", "", s.strip()) for s in re.split(r"(?<=[.!?])\s+|\n", debate) if s.strip()]
    answer = {}
    for name in output.model_json_schema()["properties"]:
        said = next((s for s in sentences if re.search(rf"\b{re.escape(name)}\b", s, re.I)), "")
        answer[name] = {"evidence": said[:300], "covered": bool(said)}
    return json.dumps(answer)


_OPTIONS = re.compile(r"Choose from:\s*((?:[A-Z]: [^\n]+?\s*)+?)(?:\n|$)")
_OPTION = re.compile(r"([A-Z]): (.+?)(?= [A-Z]: |$)")


def option_letter(prompt: str, label: Optional[str]) -> Optional[str]:
    """A prompt asking for one option letter ("Choose from: A: Against B: Favor ... Answer with only
    the option") is answered with the letter of the scripted label's option, else the first."""
    found = _OPTIONS.search(prompt)
    if not found or "only the option" not in prompt:
        return None
    options = _OPTION.findall(found.group(1).strip())
    wanted = (label or "").lower()
    return next((letter for letter, word in options if word.strip(" .").lower() == wanted), options[0][0])


def example_of(output: type[BaseModel]) -> dict[str, Any]:
    """A valid object of any other structured output: the first allowed value of each
    enumerated field (e.g. a stance), numbers 0, and a short scripted text for strings."""
    schema = output.model_json_schema()
    example: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        if "enum" in prop or "const" in prop:
            example[name] = prop.get("enum", [prop.get("const")])[0]
        elif prop.get("type") in ("integer", "number"):
            example[name] = 0
        elif prop.get("type") == "boolean":
            example[name] = False
        else:
            example[name] = f"(scripted) {name}"
    return example


LABEL_MARK = re.compile(r"SCRIPTED_LABEL=([A-Za-z0-9_-]+)")
SCORE_MARK = re.compile(r"SCRIPTED_SCORE=(-?\d+(?:\.\d+)?)")


def label_mark(messages: Sequence[LLMMessage]) -> tuple[Optional[str], str]:
    """(label, prompt) of the label script: the last `SCRIPTED_LABEL=<label>` marker in the
    latest user message that has one (test datasets put it in an item's text or comments, so
    a debate round whose last message quotes no item text answers as its opening did)."""
    for message in reversed(messages):
        if isinstance(message, UserMessage):
            marks = LABEL_MARK.findall(str(message.content))
            if marks:
                return marks[-1], str(message.content)
    return None, ""


def labelled_reply(output: type[BaseModel], messages: Sequence[LLMMessage]) -> str:
    """Any other structured output (e.g. a classifier's {label, explanation}, a negotiation
    verdict {attitude, explanation, decision}). A label script (see `label_mark`) sets every
    enumerated field that allows the label; `SCRIPTED_LABEL=GARBAGE` gives an unparseable
    reply; without a script each enumerated field is its first allowed value. Numeric fields
    are 0, or x with a `SCRIPTED_SCORE=x` marker in the last user message (S2MAD's comment
    scorer: a test comment carries its own score)."""
    example = example_of(output)
    label, _ = label_mark(messages)
    if label == "GARBAGE":
        return "(scripted) I cannot decide."
    props = output.model_json_schema().get("properties", {})
    for name, prop in props.items():
        if label is not None and label in prop.get("enum", [prop.get("const")]):
            example[name] = label
    score = SCORE_MARK.search(last_user_text(messages))
    if score:
        for name, prop in props.items():
            if prop.get("type") in ("integer", "number"):
                example[name] = float(score.group(1)) if prop["type"] == "number" else int(float(score.group(1)))
    return json.dumps(example)
