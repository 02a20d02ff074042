"""A native Ollama server, through autogen-ext's OllamaChatCompletionClient.

Structured replies send the output's JSON schema as Ollama's `format` and come back as raw text
(moot.protocols.conference.verdicts parses them); their `num_predict` is raised so a constrained reply can always finish
(moot.models.structured). Replies are bounded whatever the server does (moot.models.bounded): the
HTTP body by event hooks on the client's connection pool, the text by the call's token limit.
Imported only when an `ollama:` model is used.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import ollama
from autogen_core import CancellationToken
from autogen_core.models import CreateResult
from autogen_ext.models.ollama import OllamaChatCompletionClient

from moot.models.bounded import bound_reply, bounded_http_hooks
from moot.models.structured import structured_max_tokens


class OllamaClient(OllamaChatCompletionClient):
    """OllamaChatCompletionClient whose structured replies (`format`: the schema) can always finish."""

    def __init__(self, auth: Optional[tuple[str, str]] = None, params: Optional[Mapping[str, str]] = None,
                 **kwargs: Any):
        """`auth` (HTTP basic), `params` (query parameters): sent with every request."""
        super().__init__(**kwargs)
        self._client = ollama.AsyncClient(host=kwargs.get("host"), event_hooks=bounded_http_hooks(),
                                          auth=auth, params=params or None)

    async def create(self, messages, *, tools=[], tool_choice="auto", json_output=None,
                     extra_create_args: Mapping[str, Any] = {},
                     cancellation_token: Optional[CancellationToken] = None) -> CreateResult:
        options = {**self._create_args.get("options", {}), **extra_create_args.get("options", {})}
        limit = structured_max_tokens(options.get("num_predict"), json_output)
        if limit is not None and limit != options.get("num_predict"):
            extra_create_args = {**extra_create_args, "options": {**options, "num_predict": limit}}
        result = await super().create(messages, tools=tools, tool_choice=tool_choice, json_output=json_output,
                                      extra_create_args=extra_create_args, cancellation_token=cancellation_token)
        return bound_reply(result, limit)
