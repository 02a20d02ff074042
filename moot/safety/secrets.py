"""Secrets (API keys) in use by this process, so no error we store or print can carry them.

A server may echo the key it was sent in its error message; every cause that reaches a transcript,
a results file or the terminal goes through `redact`.
"""

from __future__ import annotations

_SECRETS: set[str] = set()
MASK = "[redacted]"


def register(secret: str | None) -> None:
    """Remember a secret this process uses (keys shorter than 8 characters are placeholders)."""
    if secret and len(secret) >= 8:
        _SECRETS.add(secret)


def redact(text: str) -> str:
    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text
