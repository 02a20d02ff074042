"""The reply cache: keyed by model spec, settings, messages and output schema."""

from __future__ import annotations

import asyncio

from autogen_core.models import UserMessage
from protocol_fakes import TaggingClient

from moot.models.cache import ReplyCache, cache_key
from moot.models.engine import ModelEngine as Engine
from moot.models.engine import RoleModel
from moot.protocols.items.labels import stance_model

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


def test_the_same_call_in_flight_twice_is_sent_once(tmp_path):
    client = TaggingClient(delay=0.05)
    engine = Engine(cache=ReplyCache(tmp_path / "c.sqlite"), clients={"scripted": client})

    async def twice():
        model = RoleModel("scripted", {})
        return await asyncio.gather(engine.ask(model, ASK, None), engine.ask(model, ASK, None))

    a, b = asyncio.run(twice())
    assert a.text == b.text and sorted([a.cached, b.cached]) == [False, True]
    assert len(client.prompts) == 1 and (engine.stats.backend_calls, engine.stats.cache_hits) == (1, 1)


def test_a_failed_call_in_flight_is_sent_again_by_the_waiter(tmp_path):
    from moot.models.calls import ModelCallError, RetryPolicy

    class FailOnce(TaggingClient):
        async def create(self, *args, **kwargs):
            if not self.prompts:
                self.prompts.append(("X", "x"))
                await asyncio.sleep(0.02)
                raise ConnectionError("down")
            return await super().create(*args, **kwargs)

    engine = Engine(cache=ReplyCache(tmp_path / "c.sqlite"), clients={"scripted": FailOnce()},
                    retry=RetryPolicy(attempts=1, backoff_s=0, timeout_s=5))

    async def twice():
        model = RoleModel("scripted", {})
        return await asyncio.gather(engine.ask(model, ASK, None), engine.ask(model, ASK, None),
                                    return_exceptions=True)

    first, second = asyncio.run(twice())
    assert isinstance(first, ModelCallError) and second.text.startswith("LING-REPLY")
