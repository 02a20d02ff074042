"""Secrets (API keys, credentials in URLs) in use by this process, so no error we store or print
can carry them.

A server may echo the key it was sent in its error message; every cause that reaches a transcript,
a results file or the terminal goes through `redact`, which also masks whatever a URL in the text
carries as credentials: its user info (`user:password@`) and the values of key-like query
parameters (`?api-key=...`, `&token=...`). A URL that is stored (run.json, a transcript's scenario
copy and backends) is stored as `redact_url` gives it.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

_SECRETS: set[str] = set()
MASK = "[redacted]"
KEY_LIKE = re.compile(r"key|token|secret|passw|pwd|auth|sig|credential|session", re.IGNORECASE)
_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)[^\s/?#@]+@")
_KEY_PARAM = re.compile(r"([?&;][^\s=&#?]*(?:key|token|secret|passw|pwd|auth|sig|credential|session)[^\s=&#?]*=)"
                        r"[^\s&#;]+", re.IGNORECASE)


def register(secret: str | None) -> None:
    """Remember a secret this process uses (keys shorter than 8 characters are placeholders)."""
    if secret and len(secret) >= 8:
        _SECRETS.add(secret)


def redact(text: str) -> str:
    for secret in sorted(_SECRETS, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return _KEY_PARAM.sub(rf"\g<1>{MASK}", _USERINFO.sub(rf"\g<1>{MASK}@", text))


def describe(exc: BaseException) -> str:
    """One line naming the exception type and message (and its cause's, when the message alone is
    vague, e.g. "Connection error."), secrets redacted."""
    text = " ".join(str(exc).split()).split(" Traceback:")[0] or "no message"  # AutoGen appends one
    cause = exc.__cause__
    if cause is not None:
        said = " ".join(str(cause).split())
        if said not in text or not said:
            text = f"{text} ({type(cause).__name__}: {said})" if said else f"{text} ({type(cause).__name__})"
    return redact(f"{type(exc).__name__}: {text[:300]}")


def redact_url(url: str) -> str:
    """`url` with its user info and the values of its key-like query parameters masked; the rest
    (scheme, host, port, path, other parameters) kept, so a record still says where it went."""
    bare = "://" not in url  # an Ollama host may be `host:port`
    parts = urlsplit(f"http://{url}" if bare else url)
    host = parts.netloc.rsplit("@", 1)[-1]
    netloc = f"{MASK}@{host}" if "@" in parts.netloc else host
    query = "&".join(f"{piece.partition('=')[0]}={MASK}" if KEY_LIKE.search(unquote(piece.partition("=")[0]))
                     else piece for piece in parts.query.split("&") if piece)
    clean = urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    return clean.removeprefix("http://") if bare else clean


def url_secrets(url: str) -> list[str]:
    """Credentials a URL carries: its user info's password, every query parameter's value."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    return [s for s in (parts.password, *(v for _, v in parse_qsl(parts.query))) if s]
