"""Problems found before a run starts, not once per item: a missing key, an unreachable server.

Each backend checks its models (moot.models.provider.Provider.preflight): an OpenAI model needs a
key (or an OpenAI-compatible base URL); a local model needs its GGUF file; a configured
OpenAI-compatible or Ollama endpoint must accept a connection. The provider's own default endpoint
(api.openai.com) is not probed.
"""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from moot.errors import MootError
from moot.safety.secrets import redact_url

TIMEOUT_S = 3.0


class Unreachable(MootError, ValueError):
    """A configured endpoint that refuses connections; one line naming it."""


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
