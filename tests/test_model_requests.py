"""Requests beyond a chat reply (continuations, choices, scores) through the one engine path:
the sentence cut and the logits processors, the cache key, the scripted model's kinds as the
protocols see them, the fallback to structured output, and reading a server's top logprobs."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import sqlite3

import numpy as np
import pytest
from autogen_core.models import RequestUsage, UserMessage

from backend_support import RecordingServer, loopback_only  # noqa: F401
from moot.log.events import Call, RunStarted
from moot.models.cache import CachedReply, ReplyCache, cache_key, message_data
from moot.models.continuation import (
    BanFirst, MinTokens, NoRepeatNGram, continuation_result, cut_to_sentence, ends_sentence, ngram_index,
)
from moot.models.engine import ModelEngine, RoleModel
from moot.models.factory import build_client
from moot.models.backends.openai.provider import OpenAIBackend
from moot.models.provider import BackendOptions
from moot.models.requests import NotSupported, Choose, Continue, Score, request_of, REQUEST_ARG
from moot.models.backends.scripted.client import ScriptedChatCompletionClient
from moot.models.server_likelihood import Reader, read_options
from moot.protocols.cola.schema import ColaScenario
from moot.protocols.negotiation.schema import NegotiationScenario
from moot.protocols.s2mad.schema import S2madScenario
from moot.kit._context import Unit, UnitContext
from moot.scenario.blocks import Backends, choice_method
from moot.log.transcript import EventLog, load
from run_support import run_item

ASK = [UserMessage(content="Is the sky blue? Please answer Yes or No.", source="user")]


# --- the sentence cut and the processors -------------------------------------------------------

@pytest.mark.parametrize("text, cut", [
    ("We agree. Then we", "We agree."),
    ("Is it? Yes! And then", "Is it? Yes!"),
    ('He said "stop." Then', 'He said "stop."'),
    ("Ask Dr. Weber about", ""),  # a title's full stop ends no sentence
    ("We met Dr. Weber. She", "We met Dr. Weber."),
    ("No sentence at all", ""),
    ("Whole sentence.  ", "Whole sentence."),
])
def test_cut_to_the_last_complete_sentence(text, cut):
    assert cut_to_sentence(text) == cut
    assert ends_sentence(cut) or cut == ""


def test_a_continuation_that_stops_mid_sentence_is_cut_and_says_so():
    none = RequestUsage(prompt_tokens=0, completion_tokens=0)
    cut = continuation_result(" We agree on the goal. But the", "length", True, none)
    assert cut.content == "We agree on the goal." and cut.finish_reason == "length"
    assert cut.detail == {"method": "completion", "cut": True, "uncut": "We agree on the goal. But the"}
    whole = continuation_result(" We agree.", "stop", True, none)
    assert whole.content == "We agree." and "cut" not in whole.detail
    kept = continuation_result(" no sentence ends", "length", True, none)  # nothing to cut to: kept
    assert kept.content == "no sentence ends" and "no complete sentence" in kept.detail["note"]
    assert continuation_result(" As is. And", "length", False, none).content == "As is. And"


def test_min_tokens_and_first_token_bans_apply_only_where_they_should():
    scores = np.zeros(10)
    MinTokens(2, prompt_len=3, banned=[1, 9])(np.arange(4), scores)  # 1 generated < 2
    assert scores[1] == scores[9] == -np.inf and scores[0] == 0
    later = MinTokens(2, prompt_len=3, banned=[1])(np.arange(5), np.zeros(10))
    assert np.isfinite(later).all()
    ended = {(3, 4): False, (3, 4, 5): True}  # generated tokens -> does the text end a sentence
    fragment = MinTokens(2, prompt_len=3, banned=[1], ends=lambda g: ended[tuple(g)])(np.arange(5), np.zeros(10))
    assert fragment[1] == -np.inf  # past min_tokens, but mid-sentence: no newline yet
    assert np.isfinite(MinTokens(2, prompt_len=3, banned=[1], ends=lambda g: ended[tuple(g)])(np.arange(6), np.zeros(10))).all()
    first = BanFirst(prompt_len=3, banned=[4])(np.arange(3), np.zeros(10))
    assert first[4] == -np.inf
    assert np.isfinite(BanFirst(prompt_len=3, banned=[4])(np.arange(4), np.zeros(10))).all()


def test_no_repeat_ngram_blocks_the_last_word_of_a_copied_run_even_across_punctuation():
    word = np.ones(20, bool)
    word[0] = False  # token 0 is punctuation
    index = ngram_index([5, 6, 0, 7, 8], n=4, word=word)  # word tokens 5 6 7 8
    assert index == {(5, 6, 7): {8}}
    block = NoRepeatNGram(4, index, prompt_len=2, word=word)
    generated = np.array([1, 2, 5, 0, 6, 7])  # prompt 1 2, then 5 , 6 7 (a comma inserted)
    assert block(generated, np.zeros(20))[8] == -np.inf
    assert np.isfinite(block(np.array([1, 2, 5, 6, 9]), np.zeros(20))).all()


# --- requests, the cache key, the cache -------------------------------------------------------

def test_a_request_round_trips_through_extra_create_args():
    choose = Choose(options=("A", "B", "C"), prefix="Answer:", reply_prefix="")
    assert request_of({REQUEST_ARG: choose.as_dict()}) == choose
    assert request_of({REQUEST_ARG: Continue(stop=("\n\n",), ban_first=("Dr. Weber",)).as_dict()}).stop == ("\n\n",)
    assert request_of({"max_tokens": 3}) is None
    with pytest.raises(ValueError):
        Choose(options=("A", "A"))


def test_a_batch_of_questions_rides_with_each_and_a_lone_question_keeps_its_key():
    batch = ("Clarity (1-10):", "Relevance (1-10):")
    score = Score(document=True, prefix=batch[1], batch=batch)
    assert request_of({REQUEST_ARG: score.as_dict()}) == score
    assert score.as_dict()["batch"] == list(batch)
    alone = Choose(options=("yes", "no"))
    assert "batch" not in alone.as_dict() and request_of({REQUEST_ARG: alone.as_dict()}) == alone


def test_the_cache_key_includes_the_kind_and_its_parameters():
    base = cache_key("local", {"seed": 0}, ASK)
    payload = {"spec": "local", "settings": {"seed": 0}, "messages": [message_data(m) for m in ASK], "output": None}
    assert base == hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    keys = {base, cache_key("local", {"seed": 0}, ASK, request=Choose(options=("Yes", "No")).as_dict()),
            cache_key("local", {"seed": 0}, ASK, request=Choose(options=("No", "Yes")).as_dict()),
            cache_key("local", {"seed": 0}, ASK, request=Choose(options=("Yes", "No"), prefix="A:").as_dict()),
            cache_key("local", {"seed": 0}, ASK, request=Score().as_dict()),
            cache_key("local", {"seed": 0}, ASK, request=Score(hi=5).as_dict()),
            cache_key("local", {"seed": 0}, ASK, request=Continue().as_dict()),
            cache_key("local", {"seed": 0}, ASK, request=Continue(min_tokens=20).as_dict())}
    assert len(keys) == 8  # a plain call's key is what it was before requests existed


def test_the_cache_keeps_a_measurement_and_reads_an_old_cache_file(tmp_path):
    old = tmp_path / "old.sqlite"
    db = sqlite3.connect(old)
    db.execute("CREATE TABLE replies (key TEXT PRIMARY KEY, spec TEXT, text TEXT, prompt_tokens INTEGER, "
               "completion_tokens INTEGER)")
    db.execute("INSERT INTO replies VALUES ('k', 'local', 'hi', 1, 2)")
    db.commit()
    db.close()
    cache = ReplyCache(old)
    assert cache.get("k") == CachedReply("hi", 1, 2, None)
    cache.put("c", "local", CachedReply("Yes", 3, 0, {"method": "likelihood", "probabilities": {"Yes": 0.8}}))
    assert cache.get("c").detail == {"method": "likelihood", "probabilities": {"Yes": 0.8}}
    cache.close()


def test_an_old_call_event_loads_as_a_chat_call():
    call = Call.model_validate({"type": "call", "role": "judge", "model": "local", "messages": [], "reply": "x"})
    assert call.kind == "chat" and call.detail is None


# --- the scripted model's kinds through the engine and a unit's context -----------------------

def _context(tmp_path, client, prior=None):
    engine = ModelEngine(clients={"scripted": client})
    log = EventLog(tmp_path / "unit.jsonl")
    if prior is None:
        log.append(RunStarted(run_id="r", protocol="test", scenario_path="s.yaml", scenario_sha256="x",
                              scenario={}, models={"judge": "scripted"}))
    return UnitContext(Unit("u", None), engine, {"judge": RoleModel("scripted")}, log, prior=prior), log


def test_scripted_choice_score_and_continuation_are_recorded_with_what_was_measured(tmp_path):
    client = ScriptedChatCompletionClient(["MORE_DEBATE"], max_tokens=12)
    ctx, log = _context(tmp_path, client)
    streamed: list[str] = []

    async def go():
        choice = await ctx.call("judge", ASK, request=Choose(options=("AGREEMENT", "MORE_DEBATE")), stage="judge")
        marked = [UserMessage(content="Rate it. SCRIPTED_SCORE=3", source="user")]
        score = await ctx.call("judge", marked, request=Score(prefix="Score (1-10):"), stage="evaluate")
        doc = [UserMessage(content="A transcript.\n\nDr. Weber:", source="document")]
        turn = await ctx.call("judge", doc, request=Continue(document=True, stop=("\n\n",)), stage="speak",
                              on_text=streamed.append)
        return choice, score, turn

    choice, score, turn = asyncio.run(go())
    log.close()
    assert choice.text == choice.option == "MORE_DEBATE" and choice.method == "scripted"
    assert choice.probabilities == {"AGREEMENT": 0.3, "MORE_DEBATE": 0.7}
    assert score.score == 3.0 and score.call.detail.probabilities == {"2": 0.25, "3": 0.5, "4": 0.25}
    assert turn.text == "(scripted) I have a point on Dr. Weber." and turn.call.detail.cut
    assert "".join(streamed).strip() == turn.call.detail.uncut  # the text as generated, before the cut
    kinds = [(c.kind, c.stage) for c in load(tmp_path / "unit.jsonl").calls]
    assert kinds == [("choice", "judge"), ("score", "evaluate"), ("continue", "speak")]


def test_a_continued_unit_serves_its_recorded_choices_from_its_log(tmp_path):
    client = ScriptedChatCompletionClient(["MORE_DEBATE"])
    ctx, log = _context(tmp_path, client)
    request = Choose(options=("AGREEMENT", "MORE_DEBATE"))
    first = asyncio.run(ctx.call("judge", ASK, request=request))
    log.close()
    again, log = _context(tmp_path, ScriptedChatCompletionClient(), prior=load(tmp_path / "unit.jsonl"))
    replayed = asyncio.run(again.call("judge", ASK, request=request))
    log.close()
    assert replayed.replayed and replayed.text == first.text == "MORE_DEBATE"
    assert replayed.probabilities == first.probabilities


def test_a_server_without_logprobs_falls_back_to_structured_output_and_says_so(tmp_path):
    def reply(path, body):
        content = '{"answer": "No"}' if body.get("response_format") else "Yes"
        return 200, {"choices": [{"message": {"content": content}, "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 5, "completion_tokens": 1}}

    with RecordingServer(reply) as server:
        client = build_client("openai:m", {}, BackendOptions({"openai": OpenAIBackend(base_url=server.url + "/v1")}))
        engine = ModelEngine(clients={"openai:m": client})
        log = EventLog(tmp_path / "unit.jsonl")
        ctx = UnitContext(Unit("u", None), engine, {"judge": RoleModel("openai:m")}, log)

        async def twice():
            return [await ctx.call("judge", ASK, request=Choose(options=("Yes", "No"))) for _ in range(2)]

        first, second = asyncio.run(twice())
        log.close()
    assert first.option == second.option == "No" and first.method == "structured" and not first.measured
    assert "no log-probabilities" in first.call.detail.note and first.call.kind == "choice"
    assert first.call.output == "Answer"
    asked = [body for _, body in server.requests]
    assert asked[0]["logprobs"] is True and asked[0]["top_logprobs"] == 20 and asked[0]["max_tokens"] == 1
    assert "logprobs" not in asked[2]  # the refusal is remembered: the second choice goes straight to JSON
    assert len(asked) == 3


# --- a server's top log-probabilities --------------------------------------------------------

def _top(lists):
    async def top(extension):
        return lists[extension]
    return top


def test_server_options_read_through_a_separator_and_split_one_from_ten():
    # Gemma writes " 7" as " ", "7" and "10" as "1", "0": the prompt is extended twice.
    lists = {"": {" ": math.log(0.9), "\n": math.log(0.1)},
             " ": {"1": math.log(0.5), "7": math.log(0.3), "x": math.log(0.2)},
             " 1": {"0": math.log(0.4), "\n": math.log(0.5), ".": math.log(0.1)}}
    found, bounded = asyncio.run(read_options(_top(lists), [str(n) for n in range(1, 11)], True, number=True))
    assert found["7"] == pytest.approx(math.log(0.9 * 0.3))
    assert found["10"] == pytest.approx(math.log(0.9 * 0.5 * 0.4))
    assert found["1"] == pytest.approx(math.log(0.9 * 0.5 * 0.6))  # ends: 1 - P(a digit follows)
    assert set(bounded) == {"2", "3", "4", "5", "6", "8", "9"}


def test_a_token_that_writes_nothing_is_neither_read_again_nor_counted():
    """llama_cpp.server lists byte fragments as "" (and a second " " after the separator): neither
    tells the options apart; extending by them would read the same position again."""
    lists = {" ": {"1": math.log(0.5), "7": math.log(0.3), " ": math.log(1e-7), "": math.log(1e-6)},
             " 1": {"0": math.log(0.4), "": math.log(0.05), "\n": math.log(0.5)}}
    asked: list[str] = []

    async def top(extension):
        asked.append(extension)
        return lists[extension]

    found, _ = asyncio.run(Reader(top, [str(n) for n in range(1, 11)], True, True, start=" ").read())
    assert asked == [" ", " 1"]
    assert found["7"] == pytest.approx(math.log(0.3)) and found["10"] == pytest.approx(math.log(0.5 * 0.4))
    assert found["1"] == pytest.approx(math.log(0.5 * 0.6))
    chat = {"": {"7": math.log(0.6), "": math.log(0.3), "\n": math.log(0.1)}}  # no NotSupported for the ""
    found, _ = asyncio.run(read_options(_top(chat), [str(n) for n in range(1, 11)], False, number=True))
    assert found["7"] == pytest.approx(math.log(0.6))


def test_server_options_count_merged_and_cased_tokens_and_refuse_what_a_chat_cannot_tell():
    lists = {"": {" yes": math.log(0.5), "Yes": math.log(0.2), " No": math.log(0.2), "Maybe": math.log(0.1)}}
    found, bounded = asyncio.run(read_options(_top(lists), ["yes", "no"], False))
    assert found == pytest.approx({"yes": math.log(0.7), "no": math.log(0.2)}) and bounded == []
    ambiguous = {"": {"1": math.log(0.6), "7": math.log(0.4)}}
    with pytest.raises(NotSupported, match="begins several options"):
        asyncio.run(read_options(_top(ambiguous), [str(n) for n in range(1, 11)], False, number=True))
    own_token = {"": {"1": math.log(0.6), "10": math.log(0.3)}}  # "10" is a token of its own: "1" means 1
    found, _ = asyncio.run(read_options(_top(own_token), [str(n) for n in range(1, 11)], False, number=True))
    assert found["1"] == pytest.approx(math.log(0.6)) and found["10"] == pytest.approx(math.log(0.3))


def test_server_options_absent_from_the_top_list_are_no_reading():
    # A chat reply that opens with prose: every score would be a bound, their expectation 5.5.
    prose = {"": {"The": math.log(0.6), "**": math.log(0.3), "Clarity": math.log(0.1)}}
    with pytest.raises(NotSupported, match="does not begin with one of them"):
        asyncio.run(read_options(_top(prose), [str(n) for n in range(1, 11)], False, number=True))
    barely = {"": {"The": math.log(0.985), "7": math.log(0.015)}}
    with pytest.raises(NotSupported):
        asyncio.run(read_options(_top(barely), [str(n) for n in range(1, 11)], False, number=True))



def test_a_document_s_options_all_listed_are_read_at_any_share():
    """As the embedded model's likelihood reads them: after a document line the options may be
    unlikely next tokens, yet both listed; in a chat reply, or with an option only bounded, the
    same share is no reading."""
    judge = {"": {" are": math.log(0.3), " have": math.log(0.2), " agree": math.log(0.012), " disagree": math.log(0.004)}}
    found, bounded = asyncio.run(read_options(_top(judge), ["agree", "disagree"], True))
    assert found == pytest.approx({"agree": math.log(0.012), "disagree": math.log(0.004)}) and bounded == []
    with pytest.raises(NotSupported, match="does not begin with one of them"):
        asyncio.run(read_options(_top(judge), ["agree", "disagree"], False))
    one = {"": {" are": math.log(0.3), " agree": math.log(0.012), " the": math.log(0.001)}}
    with pytest.raises(NotSupported, match="does not begin with one of them"):
        asyncio.run(read_options(_top(one), ["agree", "disagree"], True))


# --- the scenario's `choice` and the protocols on the scripted model ---------------------------

def test_the_engine_tells_base_from_instruction_models():
    engine = ModelEngine(BackendOptions({"openai": OpenAIBackend(base_url="http://127.0.0.1:9/v1")}))
    assert engine.model_kind(RoleModel("scripted:BASE")) == "base"
    assert engine.model_kind(RoleModel("scripted")) == "instruct"
    assert engine.model_kind(RoleModel("openai:m")) == "instruct"  # a server's model counts as one


def test_auto_choice_is_likelihood_on_the_embedded_model_only():
    assert choice_method("auto", "local", "text") == "likelihood"
    assert choice_method("auto", "local:/m.gguf", "structured") == "likelihood"
    assert choice_method("auto", "openai:gpt-4o", "text") == "text"
    assert choice_method("structured", "local", "text") == "structured"
    assert Backends.model_validate({"local": {"kind": "base", "n_gpu_layers": -1, "n_threads": 1}}).local.kind == "base"


def test_cola_by_likelihood_records_the_letter_probabilities(tmp_path):
    scenario = ColaScenario(protocol="cola", models={"default": "scripted"}, choice="likelihood")
    client = ScriptedChatCompletionClient()
    result, transcript = run_item("cola", scenario, {"text": "Great idea SCRIPTED_LABEL=favor", "target": "x"},
                                  {"scripted": client}, tmp_path / "run", gold="favor")
    judger = transcript.calls[-1]
    assert judger.kind == "choice" and judger.reply == "B"  # A: Against B: Favor C: Neutral
    assert judger.detail.probabilities == {"A": 0.15, "B": 0.7, "C": 0.15}
    outcome = transcript.outcome
    assert outcome.prediction == "favor" and outcome.decided_by == "judger (scripted)"
    assert "by scripted: A 0.15, B 0.70, C 0.15" in outcome.explanation


def test_cola_structured_choice_asks_for_the_letter_as_json(tmp_path):
    scenario = ColaScenario(protocol="cola", models={"default": "scripted"}, choice="structured")
    client = ScriptedChatCompletionClient()
    _, transcript = run_item("cola", scenario, {"text": "Bad SCRIPTED_LABEL=against", "target": "x"},
                             {"scripted": client}, tmp_path / "run")
    judger = transcript.calls[-1]
    assert judger.output == "Answer" and json.loads(judger.reply) == {"answer": "A"}
    assert transcript.outcome.prediction == "against" and transcript.outcome.decided_by == "judger"


def test_s2mad_by_likelihood_asks_each_reasoning_reply_for_its_answer(tmp_path):
    scenario = S2madScenario(protocol="s2mad", models={"default": "scripted"}, choice="likelihood", k=1, rounds=1)
    client = ScriptedChatCompletionClient()
    comments = [{"text": "backs it SCRIPTED_SCORE=0.8"}, {"text": "doubts it SCRIPTED_SCORE=-0.6"}]
    _, transcript = run_item("s2mad", scenario, {"claim": "Claim SCRIPTED_LABEL=fake", "comments": comments},
                             {"scripted": client}, tmp_path / "run")
    answers = [(c.role, c.stage, c.reply) for c in transcript.calls if c.kind == "choice"]
    assert answers[0] == ("classifier", "subjectivity", "Yes")  # the first option: no mark names one
    assert sorted(answers[1:]) == [("debater_n", "debate_answer", "Fake"), ("debater_n", "initial_opinion_answer", "Fake"),
                                   ("debater_p", "debate_answer", "Fake"), ("debater_p", "initial_opinion_answer", "Fake")]
    follow = next(c for c in transcript.calls if c.stage == "initial_opinion_answer")
    assert follow.messages[-1]["content"] == "Please choose the answer from the following options: Fake, Real."
    assert follow.messages[-2]["type"] == "AssistantMessage"
    assert transcript.outcome.prediction == "fake" and "(by scripted: Fake 0.70, Real 0.30)" in transcript.outcome.explanation


def test_negotiation_by_likelihood_reads_the_discriminator_yes(tmp_path):
    scenario = NegotiationScenario(protocol="negotiation", models={"first": "scripted", "second": "scripted:BASE"},
                                   choice="likelihood", max_turns=1)
    clients = {"scripted": ScriptedChatCompletionClient(), "scripted:BASE": ScriptedChatCompletionClient(["BASE"])}
    _, transcript = run_item("negotiation", scenario, {"text": "Lovely SCRIPTED_LABEL=positive"}, clients,
                             tmp_path / "run")
    choices = [c for c in transcript.calls if c.kind == "choice"]
    # The base model continues documents: as generator its decision is a choice after its
    # reasoning turn; as discriminator its yes/no follows the document of the generator's decision.
    # The instruction model answers in chat, its yes/no where its JSON begins. A yes needs no JSON.
    # (the two negotiations run concurrently: their calls interleave in the log as they are answered)
    by_turn = {(c.role, c.stage): c for c in choices}
    assert len(by_turn) == len(choices) and {k: c.reply for k, c in by_turn.items()} == {
        ("second", "second->first"): "positive", ("second", "first->second"): "yes", ("first", "second->first"): "yes"}
    assert len(transcript.calls) == 5 and not any(c.output for c in transcript.calls)
    gen_choice, base_yes, chat_yes = (by_turn["second", "second->first"], by_turn["second", "first->second"],
                                      by_turn["first", "second->first"])
    assert gen_choice.messages[0]["source"] == "document" and set(gen_choice.detail.probabilities) == {"positive",
                                                                                                       "negative"}
    assert base_yes.messages[0]["content"].endswith("Decision: positive.")
    assert chat_yes.messages[-1]["content"].endswith("Decision: positive")
    assert transcript.outcome.prediction == "positive" and "by likelihood" in transcript.outcome.decided_by


def test_a_learnt_separator_saves_the_first_list_and_reads_the_same_options():
    """Gemma writes " 7" as " ", "7": once a reading found no option at the first position but the
    bare separator, the same options are read after it from then on (one top list less each)."""
    from moot.models.server_likelihood import Separators

    lists = {"": {" ": math.log(0.9), "\n": math.log(0.1)},
             " ": {"1": math.log(0.5), "7": math.log(0.3), "x": math.log(0.2)},
             " 1": {"0": math.log(0.4), "\n": math.log(0.5), ".": math.log(0.1)}}
    asked: list[str] = []

    async def top(extension):
        asked.append(extension)
        return lists[extension]

    options = [str(n) for n in range(1, 11)]
    separators = Separators()
    first, _ = asyncio.run(separators.read(top, options, True, number=True))
    assert asked == ["", " ", " 1"] and separators.start(options, True) == " "
    assert separators.note(options, True)["note"].startswith("read after ' '")
    asked.clear()
    again, _ = asyncio.run(separators.read(top, options, True, number=True))
    assert asked == [" ", " 1"]  # the first list is not asked again
    # the same options, in the same proportions: only the separator's own probability is left out
    assert {o: again[o] - first[o] for o in ("1", "7", "10")} == pytest.approx({o: -math.log(0.9) for o in ("1", "7", "10")})
    assert separators.start(options, False) == "" and separators.start(["yes", "no"], True) == ""  # a chat; other options
    unlikely = Separators()  # a "7" straight after the colon, far less likely than the separator
    asyncio.run(unlikely.read(_top({**lists, "": {" ": math.log(0.44), "\n": math.log(0.5), "7": math.log(1e-3),
                                                   "  ": math.log(0.002), "": math.log(1e-4)}}), options, True, number=True))
    assert unlikely.start(options, True) == " "
    words = Separators()  # options written with their space in one token (" yes"): nothing to learn
    asyncio.run(words.read(_top({"": {" yes": math.log(0.6), " no": math.log(0.4)}}), ["yes", "no"], True))
    assert words.start(["yes", "no"], True) == ""
    # the bare separator likelier than the words (llama-server, Gemma, after "Judge:"), but the words
    # written whole with their space: what follows the separator alone holds almost none of them
    spaced = Separators()
    tops = {"": {" ": math.log(0.3), " agree": math.log(0.01), " disagree": math.log(0.0003), "\n": math.log(0.5)},
            " ": {"1": math.log(0.4), "agree": math.log(1e-5), "<em>": math.log(0.2)}}
    asyncio.run(spaced.read(_top(tops), ["agree", "disagree"], True))
    assert spaced.start(["agree", "disagree"], True) == ""
    again, _ = asyncio.run(spaced.read(_top(tops), ["agree", "disagree"], True))  # read as the first time
    assert again["agree"] > again["disagree"]
