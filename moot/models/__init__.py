"""One model interface (AutoGen's ChatCompletionClient) behind `provider:model` spec strings."""

from moot.models.calls import Completion, ModelCallError, complete
from moot.models.factory import build_client
from moot.models.provider import BackendOptions, ModelSpec
from moot.models.backends.scripted.client import ScriptedChatCompletionClient
from moot.models.spec import parse_spec

__all__ = [
    "BackendOptions", "Completion", "ModelCallError", "ModelSpec", "ScriptedChatCompletionClient",
    "build_client", "complete", "parse_spec",
]
