"""Test doubles for per-item protocols: a client that tags each reply by who asked."""

from __future__ import annotations

import asyncio
from typing import Optional

from autogen_core.models import CreateResult, RequestUsage

from moot.models.backends.scripted.client import ScriptedChatCompletionClient


def tag_of(prompt: str) -> str:
    """Which COLA role a prompt belongs to, from the paper's wording."""
    if prompt.startswith("You are a linguist"):
        return "LING"
    if prompt.startswith("You are a heavy social media user"):
        return "SOCIAL"
    if prompt.startswith("You are a "):
        return "DOMAIN"
    if prompt.startswith("Tweet:"):
        said = prompt.split("attitude behind the tweet is ", 1)[1]
        return "ARG-" + ("favor" if said.startswith("in favor of") else said.split(" ")[0])
    return "JUDGE"


class TaggingClient(ScriptedChatCompletionClient):
    """Replies `<TAG>-REPLY-<n>`; the judger gets `judge_reply` (default valid JSON). A call's
    prompt is its messages joined by a space (a COLA analyst's system role sentence, then its
    instruction: the paper's printed prompt); `requests` keeps the messages themselves.
    `delay` makes each call take that long; `in_flight`/`peak` count concurrent calls;
    `fail_judge` makes the judger fail (ConnectionError) that many times."""

    def __init__(self, judge_reply: str = '{"stance": "against", "explanation": "because"}',
                 delay: float = 0.0, fail_judge: int = 0):
        super().__init__()
        self.judge_reply, self.delay, self.fail_judge = judge_reply, delay, fail_judge
        self.in_flight = self.peak = 0
        self.prompts: list[tuple[str, str]] = []  # (tag, prompt)

    async def create(self, messages, *, tools=(), json_output=None, extra_create_args={},
                     cancellation_token=None) -> CreateResult:
        self.requests.append({"messages": list(messages), "output": json_output})
        prompt = " ".join(str(m.content) for m in messages)
        tag = tag_of(prompt)
        self.prompts.append((tag, prompt))
        number = len(self.prompts)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
        finally:
            self.in_flight -= 1
        if tag == "JUDGE" and self.fail_judge:
            self.fail_judge -= 1
            raise ConnectionError("judge backend down")
        text = self.judge_reply if tag == "JUDGE" else f"{tag}-REPLY-{number}"
        return CreateResult(content=text, usage=RequestUsage(prompt_tokens=10, completion_tokens=2),
                            finish_reason="stop", cached=False)

    def by_tag(self, prefix: str) -> list[str]:
        return [p for t, p in self.prompts if t.startswith(prefix)]


def reply_of(client: TaggingClient, tag: str) -> Optional[str]:
    for n, (t, _) in enumerate(client.prompts, 1):
        if t == tag:
            return f"{tag}-REPLY-{n}"
    return None
