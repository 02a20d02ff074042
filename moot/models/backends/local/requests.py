"""How the embedded model answers a request (moot.models.requests), in the model's process.

Everything runs under the model's lock, one request at a time, against the one llama.cpp
context the process holds: a continuation, choice or score that extends the previous prompt
(the transcript so far, a judge's branch off it) evaluates only the new tokens (FINDINGS §3:
98 % of prompt tokens reused over a conference's turns), and a prompt that goes back to a
document left for another one takes its parked state back (moot.models.backends.local.kv). A choice or
score asked with a batch reads the whole batch in one decode when the first of it comes, and
answers the others from what it kept.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Generator, Iterable, Iterator, Optional, Sequence, TypedDict, Union

from autogen_core.models import (
    AssistantMessage, CreateResult, LLMMessage, RequestUsage, SystemMessage, UserMessage,
)

from moot.models.continuation import (BanFirst, MinTokens, NoRepeatNGram, continuation_result, ends_sentence,
                                     first_tokens, ngram_index, prompt_seed)
from moot.models.backends.local.likelihood import Question, question_logprobs
from moot.models.backends.local.kv import common_prefix, sequences_of
from moot.models.backends.local.load import Loaded
from moot.models.backends.local.tokens import token_classes, tokenizer_of
from moot.models.requests import Choose, Continue, MeasuredResult, Request, Score, choice_detail, document_text, score_detail

if TYPE_CHECKING:
    from llama_cpp import LogitsProcessor, LogitsProcessorList
    from llama_cpp.llama_types import ChatCompletionRequestMessage, ChatCompletionRequestResponseFormat

Chunk = Union[str, CreateResult]
Chat = list["ChatCompletionRequestMessage"]


class Sampling(TypedDict, total=False):
    """llama.cpp's sampling arguments of one generation (moot.models.backends.local.client's settings)."""

    max_tokens: Optional[int]
    temperature: float
    seed: int
    top_p: float
    repeat_penalty: float
    response_format: ChatCompletionRequestResponseFormat
    logits_processor: LogitsProcessorList


def to_chat(messages: Sequence[LLMMessage]) -> Chat:
    """Gemma's template has no system role: fold system text into the first user turn."""
    system = "\n\n".join(m.content for m in messages if isinstance(m, SystemMessage))
    chat: Chat = []
    for message in messages:
        if isinstance(message, UserMessage):
            chat.append({"role": "user", "content": str(message.content)})
        elif isinstance(message, AssistantMessage):
            chat.append({"role": "assistant", "content": str(message.content)})
    if system:
        if chat and chat[0]["role"] == "user":
            chat[0] = {"role": "user", "content": f"{system}\n\n{chat[0]['content']}"}
        else:
            chat.insert(0, {"role": "user", "content": system})
    return chat


class _Captured(Exception):
    pass


def chat_prompt(llm: Any, chat: Chat) -> tuple[list[int], list[str]]:
    """The tokens llama-cpp-python would generate from for `chat` (its chat handler's rendering,
    generation prompt included) and the handler's stop strings. The handler is run against a
    stand-in that tokenizes with the model and captures the prompt instead of generating."""
    from llama_cpp import llama_chat_format

    handler = (llm.chat_handler or llm._chat_handlers.get(llm.chat_format)
               or llama_chat_format.get_chat_completion_handler(llm.chat_format))
    captured: dict[str, Any] = {}

    class Probe:
        verbose = False

        def tokenize(self, *args: Any, **kwargs: Any) -> list[int]:
            tokens: list[int] = llm.tokenize(*args, **kwargs)
            return tokens

        def create_completion(self, prompt: list[int], **kwargs: Any) -> None:
            captured.update(prompt=list(prompt), stop=kwargs.get("stop") or [])
            raise _Captured

    try:
        handler(llama=Probe(), messages=chat)  # type: ignore[arg-type]  # a stand-in for the Llama it renders for
    except _Captured:
        pass
    stop = captured["stop"]
    return captured["prompt"], [stop] if isinstance(stop, str) else list(stop)


class SentenceEnds:
    """Whether a request's generated tokens end a sentence (ends_sentence of their text), asked
    after every generated token: keeps the bytes detokenized so far and detokenizes only the new
    tokens. llama.cpp's detokenize is the concatenation of each token's piece, except that it drops
    a leading space after a BOS token that comes first; tokens that hold a BOS (the model hardly
    ever generates one) are detokenized whole, as before."""

    def __init__(self, llm: Any):
        self.llm, self.bos = llm, llm.token_bos()
        self.tokens: list[int] = []
        self.text = b""

    def __call__(self, generated: Iterable[int]) -> bool:
        tokens = [int(t) for t in generated]
        done = len(self.tokens)
        if tokens[:done] == self.tokens and self.bos not in tokens:
            self.text += self.llm.detokenize(tokens[done:])
        else:
            self.text = self.llm.detokenize(tokens)
        self.tokens = tokens
        return ends_sentence(self.text.decode("utf-8", "ignore"))


class LocalAnswers:
    """One request on the model loaded in this process (moot.models.backends.local.worker serves them).
    Every result records the threads it ran on and whether extra buffers were used."""

    def __init__(self, loaded: Loaded, kind: str):
        self.llm, self.lock, self.kind = loaded.llm, loaded.lock, kind
        self.extra_buffers = loaded.extra_buffers

    def stream(self, messages: Sequence[LLMMessage], request: Optional[Request], sampling: Sampling,
               stop: threading.Event) -> Generator[Chunk, None, None]:
        """Text chunks, then the result (a choice or score yields only its result). Closing the
        generator stops a generation at its next token."""
        with self.lock:
            if stop.is_set():  # the caller stopped waiting before its turn
                return
            if request is None:
                yield from self._chat(messages, sampling)
            elif isinstance(request, Continue):
                yield from self._continue(messages, request, sampling, stop)
            else:
                yield self._closed(messages, request)

    def document_form(self, request: Request) -> bool:
        return request.document or self.kind == "base"

    def _prompt(self, messages: Sequence[LLMMessage], request: Request) -> tuple[list[int], list[str]]:
        """The prompt's tokens, and the chat template's stop strings in chat form."""
        if self.document_form(request):
            return tokenizer_of(self.llm)(document_text(messages, request.prefix)), []
        tokens, stops = chat_prompt(self.llm, to_chat(messages))
        if request.reply_prefix:
            tokens = tokens + self.llm.tokenize(request.reply_prefix.encode("utf-8"), add_bos=False)
        return tokens, stops

    def _chat(self, messages: Sequence[LLMMessage], sampling: Sampling) -> Iterator[Chunk]:
        chat = to_chat(messages)
        prompt = chat_prompt(self.llm, chat)[0]
        sequences_of(self.llm).prepare(prompt)
        text, finish = "", "stop"
        for chunk in self.llm.create_chat_completion(messages=chat, stream=True, **sampling):
            choice = chunk["choices"][0]
            piece = choice["delta"].get("content") or ""
            finish = choice.get("finish_reason") or finish
            if piece:
                text += piece
                yield piece
        yield MeasuredResult(content=text, usage=self._usage(len(prompt), text), cached=False,
                             finish_reason="length" if finish == "length" else "stop", detail=self._facts())

    def _continue(self, messages: Sequence[LLMMessage], request: Continue, sampling: Sampling,
                  stop: threading.Event) -> Iterator[Chunk]:
        from llama_cpp import LogitsProcessorList, StoppingCriteriaList

        tokens, template_stops = self._prompt(messages, request)
        sequences_of(self.llm).prepare(tokens)
        evaluated = self._to_evaluate(tokens)
        if sampling.get("seed") is not None:
            sampling = {**sampling, "seed": prompt_seed(int(sampling["seed"]), tokens)}
        text, finish = "", "stop"
        for chunk in self.llm.create_completion(
                tokens, stream=True, stop=list(request.stop) + template_stops,
                # one processor applying all: llama-cpp-python copies the whole vocabulary's
                # logits back after each processor of the list, every token
                logits_processor=LogitsProcessorList([LogitsProcessorList(self._processors(request, len(tokens)))]),
                stopping_criteria=StoppingCriteriaList([lambda ids, logits: stop.is_set()]), **sampling):
            choice = chunk["choices"][0]
            finish = choice.get("finish_reason") or finish
            if choice["text"]:
                text += choice["text"]
                yield choice["text"]
        result = continuation_result(text, finish, request.sentence, self._usage(len(tokens), text))
        result.detail.update(evaluated=evaluated, **self._facts())
        yield result

    def _facts(self) -> dict[str, Any]:
        """How the model ran this request: its CPU threads, and whether extra buffers were used."""
        return {"threads": self.lock.threads, "extra_buffers": self.extra_buffers}

    def _to_evaluate(self, tokens: Sequence[int]) -> int:
        """The prompt tokens llama-cpp-python's generate will evaluate: it keeps the longest prefix
        the context already holds (short of the last token, which it always evaluates)."""
        held = self.llm.input_ids[: self.llm.n_tokens].tolist()
        return len(tokens) - common_prefix(held, tokens[:-1])

    def _processors(self, request: Continue, prompt_len: int) -> list[LogitsProcessor]:
        classes = token_classes(self.llm)
        newline = classes.newline.tolist()
        found: list[LogitsProcessor] = [BanFirst(prompt_len, newline + first_tokens(self.llm, request.ban_first))]
        if request.min_tokens:
            ends = SentenceEnds(self.llm) if request.sentence else None
            found.append(MinTokens(request.min_tokens, prompt_len, newline + [self.llm.token_eos()], ends))
        if request.no_repeat_ngram and request.reference:
            reference = tokenizer_of(self.llm)(request.reference, add_bos=False)
            index = ngram_index(reference, request.no_repeat_ngram, classes.word)
            found.append(NoRepeatNGram(request.no_repeat_ngram, index, prompt_len, classes.word))
        return found

    def _closed(self, messages: Sequence[LLMMessage], request: Union[Choose, Score]) -> MeasuredResult:
        question = self._question(messages, request)
        decoded: list[int] = []
        found = self._answered(messages, request, question, decoded)
        logprobs = dict(zip(request.texts(), found))
        read = score_detail if isinstance(request, Score) else choice_detail
        text, detail = read("likelihood", logprobs)
        detail.update(evaluated=sum(decoded), **self._facts())
        usage = RequestUsage(prompt_tokens=min(len(s) for s in question.sequences), completion_tokens=0)
        return MeasuredResult(content=text, usage=usage, finish_reason="stop", cached=False, detail=detail)

    def _answered(self, messages: Sequence[LLMMessage], request: Union[Choose, Score], question: Question,
                  decoded: list[int]) -> list[float]:
        """The question's log-probabilities: kept from its batch's reading, or read now with the
        rest of its batch (whose answers are kept for their own calls)."""
        kept = sequences_of(self.llm).answers
        found = kept.pop(question.key(), None)
        if found is not None:
            return found
        others = [self._question(messages, replace(request, prefix=p))
                  for p in dict.fromkeys(request.batch) if p != request.prefix] if self.document_form(request) else []
        answers = question_logprobs(self.llm, [question, *others], decoded)
        kept.clear()
        kept.update((q.key(), a) for q, a in zip(others, answers[1:]))
        return answers[0]

    def _question(self, messages: Sequence[LLMMessage], request: Union[Choose, Score]) -> Question:
        """The request's continuations as whole token sequences (its prompt, then each text)."""
        texts = request.texts()
        if self.document_form(request):
            prompt = document_text(messages, request.prefix) + request.sep
            tokenize = tokenizer_of(self.llm)
            sequences = [tokenize(prompt + t) for t in texts]
        else:
            tokens, _ = chat_prompt(self.llm, to_chat(messages))
            sequences = [tokens + self.llm.tokenize((request.reply_prefix + t).encode("utf-8"), add_bos=False)
                         for t in texts]
        continuing = token_classes(self.llm).digit if isinstance(request, Score) else None
        return Question(sequences, continuing)

    def _usage(self, prompt_tokens: int, text: str) -> RequestUsage:
        generated = len(self.llm.tokenize(text.encode("utf-8"), add_bos=False)) if text else 0
        return RequestUsage(prompt_tokens=prompt_tokens, completion_tokens=generated)
