"""The embedded model (Gemma 3 270M, llama.cpp): choices and scores read from its
log-probabilities, continuations with the processors and the cut, streaming and cancellation,
base/instruct detection. The client answers from the model's own process; what it computes is
also checked on a model loaded in this process (`llm`). Short prompts: each test is a few seconds."""

from __future__ import annotations

import asyncio
import ctypes
import math
import re
import time

import llama_cpp
import pytest
from autogen_core.models import UserMessage

from backend_support import machine_llama
from moot.models.cache import ReplyCache
from moot.models.engine import ModelEngine, RoleModel
from llama_cpp.llama_chat_format import format_gemma

from moot.models.backends.local.likelihood import Question, option_logprobs, question_logprobs, sequence_logprobs
from moot.models.backends.local.extra_buffers import choose
from moot.models.backends.local.client import LocalChatCompletionClient, default_model_path, model_kind
from moot.models.backends.local.load import has_chat_template, load_llama
from moot.models.backends.local.process import LocalConfig, process_for
from moot.models.backends.local.requests import chat_prompt
from moot.models.backends.local.tokens import PIECE_BYTES, piece, pieces_at_once, token_classes, tokenizer_of
from moot.models.requests import REQUEST_ARG, Choose, Continue, Score

pytestmark = pytest.mark.slow

QUESTION = "Question: Is the sky blue on a clear day? Please answer Yes or No."
DOC = ("Verbatim transcript of a decision conference on drug policy. The moderator asks questions; "
       "Dr. Weber, a public-health researcher, and Prof. Okafor, a criminologist, answer in plain sentences.\n\n"
       "Moderator: What should count as a good outcome of a drug policy?\n\nDr. Weber:")
DEBATE = (f"{DOC} Fewer deaths from overdoses, less disease, and more people in treatment who want it.\n\n"
          "Prof. Okafor: I agree, and I would add fewer people in prison for possession and less violence "
          "in the drug trade.")
ASPECTS = ("Clarity", "Relevance", "Conciseness", "Politeness", "Engagement", "Flow", "Coherence",
           "Responsiveness", "Language use", "Emotional intelligence", "Overall")


@pytest.fixture(scope="module")
def client():
    return LocalChatCompletionClient(LocalConfig(default_model_path(), n_ctx=2048, n_threads=1),
                                     {"max_tokens": 60, "temperature": 0.7, "seed": 1})


@pytest.fixture(scope="module")
def llm():
    """The same model loaded in this process, for what the model's process computes."""
    path = default_model_path()
    return load_llama(path, 2048, 1, extra_buffers=choose("auto", path).use).llm


def ask(client, messages, request):
    return asyncio.run(client.create(messages, extra_create_args={REQUEST_ARG: request.as_dict()}))


def test_the_bundled_model_is_a_base_model_and_a_template_makes_one_instruct(client, llm):
    assert client.model_kind == "base" and llm.chat_format == "gemma"
    assert has_chat_template({"tokenizer.chat_template": "{{ messages }}"})
    assert has_chat_template({"tokenizer.chat_template.tool_use": "..."})
    assert not has_chat_template({"general.name": "x"})
    assert model_kind(True) == "instruct" and model_kind(False) == "base" and model_kind(True, "base") == "base"
    tokens, stops = chat_prompt(llm, [{"role": "user", "content": "Hi"}])
    assert llm.detokenize(tokens, special=True).decode() == (
        "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n")
    assert stops == ["<end_of_turn>\n"]


def test_option_logprobs_equal_llama_cpp_s_own_on_a_logits_all_model(llm):
    prompt = f"{QUESTION}\n\nAnswer:"
    ours = option_logprobs(llm, prompt, ["Yes", "No", "Maybe"], sep=" ")
    reference = machine_llama(n_ctx=256, logits_all=True, n_threads=1)
    top = reference.create_completion(prompt, max_tokens=1, logprobs=20, temperature=0)["choices"][0]["logprobs"]
    listed = top["top_logprobs"][0]
    compared = [o for o in ("Yes", "No", "Maybe") if " " + o in listed]
    assert len(compared) >= 2
    # In probability, not log-probability: batched and single-token evaluation round differently
    # between llama.cpp builds and CPUs, by up to a few tenths of a nat on unlikely options.
    for option in compared:
        assert math.exp(ours[option]) == pytest.approx(math.exp(listed[" " + option]), abs=0.02), option
    assert max(compared, key=ours.get) == max(compared, key=lambda o: listed[" " + o])
    del reference


def test_a_choice_is_the_most_likely_option_and_branches_reuse_the_prompt(client):
    asked = [UserMessage(content=QUESTION, source="user")]
    result = ask(client, asked, Choose(options=("Yes", "No")))
    probs = result.detail["probabilities"]
    assert result.detail["method"] == "likelihood" and sum(probs.values()) == pytest.approx(1, abs=1e-3)
    assert result.content == max(probs, key=probs.get)
    started = time.monotonic()
    again = ask(client, asked, Choose(options=("Yes", "No", "Perhaps")))  # same prompt: only the options
    assert again.detail["evaluated"] <= 4 and time.monotonic() - started < 2
    assert math.exp(again.detail["logprobs"]["Yes"]) == pytest.approx(math.exp(result.detail["logprobs"]["Yes"]),
                                                                       abs=0.02)


def test_a_score_is_an_expectation_that_tells_ten_from_one(client, llm):
    asked = [UserMessage(content="Rate how clear this sentence is: 'The sky is blue.'", source="user")]
    result = ask(client, asked, Score(prefix="Clarity (1-10):"))
    probs = {int(k): v for k, v in result.detail["probabilities"].items()}
    assert sorted(probs) == list(range(1, 11)) and sum(probs.values()) == pytest.approx(1, abs=1e-3)
    # the probabilities are recorded to 4 places: their expectation may be off by up to sum(k) * 0.00005
    assert result.detail["expected"] == pytest.approx(sum(k * v for k, v in probs.items()), abs=55 * 0.00005)
    assert float(result.content) == pytest.approx(result.detail["expected"], abs=0.01)
    # "1" is charged for ending there (Gemma writes "10" as "1", "0"): P(10) is its own mass
    logprobs = result.detail["logprobs"]
    whole_one = option_logprobs(llm, "Rate how clear this sentence is: 'The sky is blue.'\n\nClarity (1-10):",
                                ["1", "2"], sep=" ")["1"]  # "1" scored alone: 1 and 10 together
    assert logprobs["1"] < whole_one and logprobs["10"] < whole_one


def test_a_continuation_is_a_turn_that_copies_nothing_and_ends_a_sentence(client):
    reference = DOC
    request = Continue(document=True, stop=("\n\n", "\nModerator:", "\nProf. Okafor:"), min_tokens=20,
                       ban_first=("Dr. Weber", "Prof. Okafor", "Moderator"), no_repeat_ngram=7, reference=reference)
    result = ask(client, [UserMessage(content=DOC, source="document")], request)
    generated = result.detail.get("uncut") or result.content
    assert result.content and not generated.startswith("\n") and not generated.startswith(("Dr", "Prof", "Moder"))
    assert re.search(r"[.!?][\"')\]]*$", result.content) or result.detail.get("note")
    assert result.detail.get("cut", False) == (result.content != generated)
    words = re.findall(r"[a-z0-9']+", reference.lower())
    copied = {tuple(words[i:i + 8]) for i in range(len(words) - 7)}
    said = re.findall(r"[a-z0-9']+", generated.lower())
    assert not copied & {tuple(said[i:i + 8]) for i in range(len(said) - 7)}
    assert len(said) >= 10  # no newline or end of text before 20 tokens


def test_streaming_shows_text_as_generated_and_a_cancelled_stream_stops_at_once(client):
    request = Continue(document=True, stop=("\n\n",), min_tokens=20)
    messages = [UserMessage(content=DOC, source="document")]

    async def stream():
        arrived, ticks, result = [], 0, None

        async def heartbeat():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.02)
                ticks += 1

        beat = asyncio.create_task(heartbeat())
        async for item in client.create_stream(messages, extra_create_args={REQUEST_ARG: request.as_dict()}):
            if isinstance(item, str):
                arrived.append((time.monotonic(), item))
            else:
                result = item
        beat.cancel()
        return arrived, ticks, result, time.monotonic()

    arrived, ticks, result, ended = asyncio.run(stream())
    assert len(arrived) > 3 and arrived[0][0] < ended - 0.1 and ticks > 5  # the loop kept running
    assert "".join(t for _, t in arrived).strip() == (result.detail.get("uncut") or result.content)

    async def cancel():
        long = Continue(document=True, stop=(), min_tokens=0)
        chunks = []

        async def consume():
            async for item in client.create_stream(messages, extra_create_args={
                    REQUEST_ARG: long.as_dict(), "max_tokens": 400}):
                chunks.append(item)

        task = asyncio.create_task(consume())
        while not chunks:
            await asyncio.sleep(0.01)
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - started

    assert asyncio.run(cancel()) < 1.0
    assert ask(client, [UserMessage(content=QUESTION, source="user")], Choose(options=("Yes", "No"))).content


def test_an_instruction_model_is_scored_after_its_chat_template(client, llm):
    instruct = LocalChatCompletionClient(client.config, {"max_tokens": 8}, kind="instruct")
    assert process_for(instruct.config) is process_for(client.config)  # one process serves both
    result = ask(instruct, [UserMessage(content=QUESTION, source="user")], Choose(options=("Yes", "No")))
    rendered = format_gemma(messages=[{"role": "user", "content": QUESTION}]).prompt
    prompt = llm.tokenize(rendered.encode(), special=True)
    options = [prompt + llm.tokenize(o.encode(), add_bos=False) for o in ("Yes", "No")]
    expected = dict(zip(("Yes", "No"), sequence_logprobs(llm, options)))
    probability = {k: math.exp(v) for k, v in expected.items()}
    assert {k: math.exp(v) for k, v in result.detail["logprobs"].items()} == pytest.approx(probability, abs=0.02)
    base = ask(client, [UserMessage(content=QUESTION, source="user")], Choose(options=("Yes", "No")))
    assert base.detail["logprobs"] != pytest.approx(expected, abs=0.2)  # a base model: document form


def test_the_engine_caches_a_measured_choice_with_its_probabilities(tmp_path, client):
    engine = ModelEngine(cache=ReplyCache(tmp_path / "cache.sqlite"), clients={"local": client})
    model = RoleModel("local", {"max_tokens": 8})
    asked = [UserMessage(content=QUESTION, source="user")]

    async def twice():
        return [await engine.ask(model, asked, request=Choose(options=("Yes", "No"))) for _ in range(2)]

    first, second = asyncio.run(twice())
    assert not first.cached and second.cached and second.detail == first.detail and second.text == first.text
    assert engine.stats.backend_calls == 1


def criteria(batch: bool) -> list[Score]:
    """The evaluator's eleven questions after the debate, asked as one batch or each alone."""
    prefixes = tuple(f"[The evaluator scores the debate.]\n{aspect} (1-10):" for aspect in ASPECTS)
    return [Score(document=True, prefix=p, batch=prefixes if batch else ()) for p in prefixes]


def test_the_evaluator_s_criteria_read_together_equal_each_read_alone(client):
    debate = [UserMessage(content=DEBATE, source="document")]
    alone = [ask(client, debate, score).detail for score in criteria(batch=False)]
    together = [ask(client, debate, score).detail for score in criteria(batch=True)]
    assert together[0]["evaluated"] > 0 and all(d["evaluated"] == 0 for d in together[1:])  # one reading
    assert all(d["evaluated"] > 0 for d in alone)
    assert {d["threads"] for d in alone + together} == {1}  # the client's fixed thread count, recorded
    # llama.cpp's numbers for a branch depend on the batch it is decoded in and on where its cells
    # lie in the cache: on conference documents the same question read alone and in the batch
    # differed here by up to 0.04 in probability (0.36 in expectation), as much as today's reading
    # of one question differs between a fresh context and a cached prefix (0.03). A misread row
    # or position (another branch's, the prompt's instead of after "1") is off by far more.
    for one, both in zip(alone, together):
        assert both["probabilities"] == pytest.approx(one["probabilities"], abs=0.06)
        assert both["expected"] == pytest.approx(one["expected"], abs=0.5)
    assert len({round(d["expected"], 4) for d in together}) > 1  # each criterion read after its own prefix


def test_the_vocabulary_read_in_one_pass_equals_each_token_read_alone(llm):
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    buffer = ctypes.create_string_buffer(PIECE_BYTES)
    alone = [piece(vocab, token, buffer) for token in range(llm.n_vocab())]
    assert pieces_at_once(llm, vocab, buffer) == alone
    assert alone[238] == "\0" and sum("\n" in text for text in alone) > 10  # the NUL token and newlines kept

    class NoNulToken:  # a vocabulary that writes NUL with two tokens: read token by token
        def tokenize(self, text, add_bos, special):
            return [7, 8]

    assert pieces_at_once(NoNulToken(), vocab, buffer) is None


def test_a_context_without_spare_sequences_reads_branches_one_after_another(llm):
    plain = machine_llama(n_ctx=1024, n_threads=1)
    tokenize, digit = tokenizer_of(llm), token_classes(llm).digit
    prompts = [f"{DEBATE}\n\n{aspect} (1-10): " for aspect in ASPECTS[:3]]
    questions = [Question([tokenize(p + str(n)) for n in range(1, 11)], digit) for p in prompts]
    ours = question_logprobs(llm, questions)
    decoded: list[int] = []
    theirs = question_logprobs(plain, questions, decoded)
    assert decoded[0] >= len(questions[0].sequences[0])  # the prompt, then each branch, all in sequence 0
    for a, b in zip(ours, theirs):  # (in probability, for the reasons above)
        assert [math.exp(x) for x in b] == pytest.approx([math.exp(x) for x in a], abs=0.06)
    del plain


def test_a_document_left_for_another_is_taken_back_not_evaluated_again():
    client = LocalChatCompletionClient(LocalConfig(default_model_path(), n_ctx=1536, n_threads=1),  # a fresh context
                                       {"max_tokens": 8})
    debate, asked = [UserMessage(content=DEBATE, source="document")], Score(document=True, prefix="Clarity (1-10):")
    first = ask(client, debate, asked)
    other = ask(client, [UserMessage(content=" ".join([QUESTION] * 8), source="document")],
                Choose(document=True, options=("Yes", "No")))
    again = ask(client, debate, asked)
    assert other.detail["evaluated"] > 100 and first.detail["evaluated"] > 100
    assert again.detail["evaluated"] <= 3  # the branch (the prompt's last token, "1"): the rest taken back
    # the same cells, in the same places: the same numbers, not a re-evaluation's (0.03 off here)
    assert again.detail["probabilities"] == pytest.approx(first.detail["probabilities"], abs=1e-3)


def test_a_document_is_tokenized_as_a_whole_is(llm):
    tokenize = tokenizer_of(llm)
    assert tokenize.apart  # Gemma: no token holds a newline with another character
    texts = [DEBATE, DEBATE + "\n\nScore (1-10): 7", "\n\n" + DEBATE + "\n", " \n \n x\n\n\ny", "", "\n", "a\r\nb",
             "Zürich \u2014 \u201cquoted\u201d\n\n\U0001F600 end"]
    for text in texts:
        assert tokenize(text) == llm.tokenize(text.encode()), repr(text)
        assert tokenize(text, add_bos=False) == llm.tokenize(text.encode(), add_bos=False), repr(text)
