"""The embedded model's generation controls go to a server declared llama-server, in its own
fields, and to no other (moot.models.backends.openai.llama_controls): checked against a loopback recorder."""

from __future__ import annotations

import asyncio
import zlib

import numpy as np
import pytest
from autogen_core.models import UserMessage

from backend_support import RecordingServer
from moot.models.factory import build_client
from moot.models.backends.openai.llama_controls import SENTENCE_GRAMMAR
from moot.models.continuation import prompt_seed
from moot.models.backends.openai.provider import OpenAIBackend
from moot.models.provider import BackendOptions
from moot.models.requests import REQUEST_ARG, Continue

TOKENS = [2, 1001, 1002, 1003]  # what the recorder's /tokenize answers
SETTINGS = {"temperature": 0.7, "max_tokens": 40, "seed": 3, "repeat_penalty": 1.25}
TURN = Continue(document=True, prefix="Alice:", stop=("\n\n", "Bob:"), min_tokens=20, ban_first=("Bob Smith",),
                no_repeat_ngram=7, reference="A document.")
LLAMA_ONLY = {"top_k", "min_p", "typical_p", "repeat_penalty", "repeat_last_n", "logit_bias", "ignore_eos",
              "grammar", "dry_multiplier", "cache_prompt"}


def served(path: str, body: dict) -> tuple[int, dict]:
    """/tokenize: TOKENS; a completion: a piece as long as asked (1 token, up to 20, then the rest)."""
    if path.endswith("/tokenize"):
        return 200, {"tokens": TOKENS}
    text, made, finish = {1: (" I", 1, "length"), 19: (" think that the rest", 19, "length")}.get(
        body.get("max_tokens"), (" is fine.", 3, "stop"))
    return 200, {"choices": [{"index": 0, "text": text, "finish_reason": finish}],
                 "usage": {"prompt_tokens": 4, "completion_tokens": made}}


def turn(server: str) -> tuple[object, list[tuple[str, dict]]]:
    with RecordingServer(served) as recorder:
        client = build_client("openai:gemma", SETTINGS, BackendOptions(
            {"openai": OpenAIBackend(base_url=f"{recorder.url}/v1", kind="base", server=server)}))

        async def ask():
            try:
                return await client.create([UserMessage(content="A document.", source="u")],
                                           extra_create_args={REQUEST_ARG: TURN.as_dict()})
            finally:
                await client.close()

        return asyncio.run(ask()), recorder.requests


def test_a_llama_server_turn_carries_the_embedded_model_s_controls():
    result, requests = turn("llama-server")
    paths = [path for path, _ in requests]
    assert paths == ["/tokenize", "/v1/completions", "/v1/completions", "/v1/completions"]
    first, least, rest = (body for _, body in requests[1:])
    for body in (first, least, rest):
        assert body["top_k"] == 40 and body["min_p"] == 0.05 and body["repeat_penalty"] == 1.25
        assert body["temperature"] == 0.7 and body["stop"] == ["\n\n", "Bob:"] and body["cache_prompt"] is True
        assert body["dry_allowed_length"] == 6 and body["dry_multiplier"] > 100
    assert first["prompt"] == TOKENS and first["seed"] == prompt_seed(3, TOKENS)  # the embedded model's seed
    assert first["max_tokens"] == 1 and first["ignore_eos"] is True
    assert {"\n", " Bob Smith", " Bob"} <= {k for k, v in first["logit_bias"].items() if v is False}
    assert least["max_tokens"] == 19 and least["ignore_eos"] is True and " Bob" not in least["logit_bias"]
    assert least["prompt"] == [*TOKENS, " I"]
    assert rest["max_tokens"] == 20 and rest["grammar"] == SENTENCE_GRAMMAR and "ignore_eos" not in rest
    assert rest["prompt"] == [*TOKENS, " I think that the rest"] and rest["seed"] != first["seed"]
    assert result.content == "I think that the rest is fine."
    assert result.usage.completion_tokens == 23 and "note" not in result.detail


def test_any_other_server_gets_only_openai_s_fields():
    result, requests = turn("any")
    assert [path for path, _ in requests] == ["/v1/completions"]
    assert not LLAMA_ONLY & set(requests[0][1]) and requests[0][1]["prompt"].endswith("Alice:")
    assert result.detail["note"] == "logits processors are not applied by a server"


@pytest.mark.parametrize("tokens", [[], [2], [2, 262143, 7, 0]])
def test_the_seed_mixed_with_a_prompt_is_the_embedded_model_s(tokens):
    assert prompt_seed(42, tokens) == zlib.crc32(np.asarray([42, *tokens], dtype=np.int64).tobytes()) & 0x7FFFFFFF
