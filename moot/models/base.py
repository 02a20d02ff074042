"""What moot's own model clients share: AutoGen's ChatCompletionClient interface, usage totals.

moot's clients (the OpenAI-compatible client, the scripted test model) implement `create` only;
token counting answers without downloading a tokenizer (a rough estimate: moot never budgets
contexts with it), and streaming is offered where a client has it.
"""

from __future__ import annotations

from typing import Any, AsyncGenerator, Literal, Mapping, Optional, Sequence, Union

from autogen_core import CancellationToken
from autogen_core.models import ChatCompletionClient, CreateResult, LLMMessage, ModelInfo, RequestUsage
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

# The parameter types of AutoGen's ChatCompletionClient.create and create_stream
Tools = Sequence[Union[Tool, ToolSchema]]
ToolChoice = Union[Tool, Literal["auto", "required", "none"]]
JsonOutput = Optional[Union[bool, type[BaseModel]]]
Stream = AsyncGenerator[Union[str, CreateResult], None]  # text chunks, then the CreateResult

GENERIC_INFO = ModelInfo(vision=False, function_calling=False, json_output=True,
                         structured_output=True, family="unknown")


class MootClient(ChatCompletionClient):
    """A ChatCompletionClient whose subclasses implement `create`; usage is summed here."""

    info: ModelInfo = GENERIC_INFO

    def __init__(self) -> None:
        self._usage = RequestUsage(prompt_tokens=0, completion_tokens=0)

    def add_usage(self, usage: RequestUsage) -> None:
        self._usage = RequestUsage(prompt_tokens=self._usage.prompt_tokens + usage.prompt_tokens,
                                   completion_tokens=self._usage.completion_tokens + usage.completion_tokens)

    def create_stream(self, messages: Sequence[LLMMessage], *, tools: Tools = (), tool_choice: ToolChoice = "auto",
                      json_output: JsonOutput = None, extra_create_args: Mapping[str, Any] = {},
                      cancellation_token: Optional[CancellationToken] = None) -> Stream:
        raise NotImplementedError(f"{type(self).__name__} does not stream")

    async def close(self) -> None:
        return None

    def actual_usage(self) -> RequestUsage:
        return self._usage

    def total_usage(self) -> RequestUsage:
        return self._usage

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Tools = ()) -> int:
        return sum(len(str(m.content)) for m in messages) // 4

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Tools = ()) -> int:
        return 1_000_000

    @property
    def capabilities(self) -> ModelInfo:  # deprecated in AutoGen, still abstract
        return self.info

    @property
    def model_info(self) -> ModelInfo:
        return self.info
