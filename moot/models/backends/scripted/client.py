"""A deterministic model for tests and demos, with the same interface as the real backends.

It answers from what it is asked and its script: plain turns get a short reply naming what the
prompt asks about; a structured output gets a valid object of its schema, and a free-text prompt
offering two of the script's words ("AGREEMENT or MORE DEBATE") an answer in words, both following
the script (moot.models.backends.scripted.replies). Free-text replies to a prompt carrying
`SCRIPTED_LABEL=<label>` end with a decisive "Answer: <label>" line ("Decision: <label>" when
the prompt asks for "Decision:"), so per-item protocols get known predictions from a marked test
dataset. Script tokens: AGREEMENT, MORE_DEBATE, NEXT_TOPIC, GARBAGE (an unparseable reply),
EMPTY (an empty reply) and FAIL (a connection error); BASE makes it present itself as a base
model (`model_kind`). Every request is recorded in `requests` so tests can assert exactly what
each agent was shown.

It plays along (`plays_along`): a free turn whose protocol declared what its answer looks like
(moot.models.expect) is answered in that form, each option its fields take picked from the
client's seed and the prompt (a `SCRIPTED_LABEL` mark's label when it is one), so runs are
deterministic per seed and repeats with other seeds vary. Closed answers keep the rule above.

Continuations, choices and scores (moot.models.requests) are answered by
moot.models.backends.scripted.requests; `create_stream` yields a reply word by word.
"""

from __future__ import annotations

import re
from typing import Any, AsyncGenerator, Iterable, Literal, Mapping, Optional, Sequence, Union

from autogen_core import CancellationToken
from autogen_core.models import CreateResult, LLMMessage, ModelInfo, RequestUsage
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

from moot.errors import nearest
from moot.models.base import MootClient
from moot.models.expect import Expected, expected_of
from moot.models.requests import Request, document_text, request_of
from moot.models.backends.scripted.replies import (
    SCORE_MARK, label_mark, last_user_text, offered_reply, structured_reply,
)
from moot.models.backends.scripted.requests import answer as scripted_answer

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
    in_process = True
    plays_along = True  # told each question's declared answer form (moot.models.expect)

    def __init__(self, script: Iterable[str] = (), fail_calls: Iterable[int] = (), score: int = 7,
                 record: bool = True, max_tokens: int = 256, seed: object = 0):
        super().__init__()
        self.seed = seed  # with the prompt, picks a declared free turn's options
        self.expected: Optional[Expected] = None  # the answer form of the call being answered
        script = list(script)
        self.model_kind = "base" if "BASE" in script else "instruct"
        self.script = [t for t in script if t != "BASE"]
        self.max_tokens = max_tokens
        self.record = record  # keep every request (tests read them); off for `--model scripted` runs
        self.fail_calls = set(fail_calls)
        self.score = score
        self.requests: list[dict[str, Any]] = []
        self.calls = 0

    async def create(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = [],
                     tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
                     json_output: Optional[bool | type[BaseModel]] = None, extra_create_args: Mapping[str, Any] = {},
                     cancellation_token: Optional[CancellationToken] = None) -> CreateResult:
        self.calls += 1
        request = request_of(extra_create_args)
        self.expected = expected_of(extra_create_args)  # create answers without awaiting: calls do not mix
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

    async def create_stream(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = [],
                            tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
                            json_output: Optional[bool | type[BaseModel]] = None,
                            extra_create_args: Mapping[str, Any] = {},
                            cancellation_token: Optional[CancellationToken] = None,
                            ) -> AsyncGenerator[Union[str, CreateResult], None]:
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

    def _reply(self, messages: Sequence[LLMMessage], output: object) -> str:
        if isinstance(output, type) and issubclass(output, BaseModel):
            return structured_reply(output, messages, self.script, self.score)
        offered = offered_reply(last_user_text(messages), self.script)
        if offered is not None:
            return offered
        declared = self._declared(messages)
        return declared if declared is not None else self._text_reply(messages)

    def _declared(self, messages: Sequence[LLMMessage]) -> Optional[str]:
        """A free turn in the form its protocol declared, if it declared one (a test's GARBAGE mark
        keeps its unreadable reply)."""
        label = label_mark(messages)[0]
        if self.expected is None or not self.expected.template or label == "GARBAGE":
            return None
        return self.expected.filled(self.seed, document_text(messages), label)

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


_OPTIONS = re.compile(r"Choose from:\s*((?:[A-Z]: [^\n]+?\s*)+?)(?:\n|$)")
_OPTION = re.compile(r"([A-Z]): (.+?)(?= [A-Z]: |$)")


def option_letter(prompt: str, label: Optional[str]) -> Optional[str]:
    """A prompt asking for one option letter ("Choose from: A: Against B: Favor ... Answer with only
    the option") is answered with the letter of the scripted label's option, else the first."""
    found = _OPTIONS.search(prompt)
    if not found or "only the option" not in prompt:
        return None
    options: list[tuple[str, str]] = _OPTION.findall(found.group(1).strip())
    wanted = (label or "").lower()
    return next((letter for letter, word in options if word.strip(" .").lower() == wanted), options[0][0])
