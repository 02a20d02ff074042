"""The scripted backend (`scripted`, `scripted:TOKENS`): deterministic replies for tests and demos."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Mapping, Optional

from moot.models.provider import BackendOptions, ModelSpec, NoOptions, Provider

if TYPE_CHECKING:
    from autogen_core.models import ChatCompletionClient

CLIENT = "moot.models.backends.scripted.client"


def build(spec: ModelSpec, settings: Mapping[str, Any], options: BackendOptions,
          address: Optional[str]) -> ChatCompletionClient:
    scripted = importlib.import_module(CLIENT)
    client: ChatCompletionClient = scripted.ScriptedChatCompletionClient(
        scripted.parse_script(spec.model), record=False, max_tokens=int(settings.get("max_tokens") or 256),
        seed=settings.get("seed") or 0)
    return client


def check_model(script: str) -> None:
    """A bad script token is a bad spec, caught at validation time."""
    importlib.import_module(CLIENT).parse_script(script)


SCRIPTED = Provider("scripted", NoOptions, CLIENT, build, check_model=check_model)
