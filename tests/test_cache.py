"""The reply cache: keyed by model spec, settings, messages and output schema."""

from __future__ import annotations

import asyncio

from autogen_core.models import UserMessage
from protocol_fakes import TaggingClient

from moot.protocols.cache import ReplyCache, cache_key
from moot.protocols.context import Engine, RoleModel
from moot.protocols.labels import stance_model

ASK = [UserMessage(content="You are a linguist. Hello", source="user")]


def test_key_depends_on_spec_settings_messages_and_schema():
    base = cache_key("openai:a", {"temperature": 0}, ASK)
    assert base == cache_key("openai:a", {"temperature": 0}, list(ASK))
    assert base != cache_key("openai:b", {"temperature": 0}, ASK)
    assert base != cache_key("openai:a", {"temperature": 0.5}, ASK)
    assert base != cache_key("openai:a", {"temperature": 0}, [UserMessage(content="Hi", source="user")])
    assert base != cache_key("openai:a", {"temperature": 0}, ASK, stance_model(["favor", "against"]))
    assert (cache_key("x", {}, ASK, stance_model(["favor", "against"]))
            != cache_key("x", {}, ASK, stance_model(["favor", "against", "neutral"])))


def test_two_model_specs_make_two_entries_and_repeats_hit(tmp_path):
    a, b = TaggingClient(), TaggingClient()
    cache = ReplyCache(tmp_path / "c.sqlite")
    engine = Engine(cache=cache, clients={"scripted": a, "scripted:AGREEMENT": b})

    async def ask_all():
        for spec in ("scripted", "scripted:AGREEMENT", "scripted", "scripted:AGREEMENT"):
            await engine.ask(RoleModel(spec, {"temperature": 0}), ASK, None)

    asyncio.run(ask_all())
    assert cache.specs() == {"scripted": 1, "scripted:AGREEMENT": 1}
    assert (len(a.prompts), len(b.prompts)) == (1, 1)
    assert (engine.stats.backend_calls, engine.stats.cache_hits) == (2, 2)
    cache.close()
    reopened = ReplyCache(tmp_path / "c.sqlite")
    assert len(reopened) == 2
    assert reopened.get(cache_key("scripted", {"temperature": 0}, ASK)).text.startswith("LING-REPLY")
