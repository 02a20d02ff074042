"""Problems found before a run starts, not once per item: a missing key, an unreachable server.

Checked for every model a run will use: an OpenAI model needs a key (or an OpenAI-compatible base
URL); a local model needs its GGUF file; a configured OpenAI-compatible or Ollama endpoint must
accept a connection. The provider's own default endpoint (api.openai.com) is not probed.
"""

from __future__ import annotations

import os
import socket
from typing import Iterable
from urllib.parse import urlsplit

from moot.models.factory import BackendOptions, MissingKey
from moot.models.spec import parse_spec
from moot.errors import MootError
from moot.safety.secrets import redact_url

TIMEOUT_S = 3.0


class Unreachable(MootError, ValueError):
    """A configured endpoint that refuses connections; one line naming it."""


def preflight(specs: Iterable[str], options: BackendOptions) -> None:
    for provider, model in {(s.provider, s.model) for s in map(parse_spec, specs)}:
        if provider == "openai":
            options.openai_key()
            for url in options.openai_endpoints():
                check_reachable(url, "OpenAI-compatible endpoint")
        elif provider == "ollama":
            for url in options.ollama_endpoints():
                check_reachable(url or "http://127.0.0.1:11434", "Ollama server")
        elif provider == "local" and model and not os.path.isfile(model):
            raise MissingKey(f"local model file not found: {model}")


def check_reachable(url: str | None, what: str) -> None:
    if not url:
        return
    parts = urlsplit(url if "://" in url else f"http://{url}")
    host = parts.hostname or "127.0.0.1"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=TIMEOUT_S):
            return
    except OSError as exc:
        raise Unreachable(f"{what} {redact_url(url)} is unreachable ({exc.strerror or exc}); start it or fix the URL "
                          "(--base-url / --ollama-host / the scenario's backends:)") from None
