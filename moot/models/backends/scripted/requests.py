"""The scripted model's answers to requests (moot.models.requests), deterministic, so tests run
the same code paths as the real backends: the same reply types, the same detail, the same cut.

- a choice picks the option the script names next (its next token, when that is an option or
  names one in the script's synonyms: AGREEMENT "agree", MORE_DEBATE "disagree" or "continue",
  NEXT_TOPIC "move"; it is used up), else the option a `SCRIPTED_LABEL=<label>` mark names (an
  option equal to the label, or the letter of a "Choose from: A: Against B: Favor" list), else
  the first option;
  the chosen option gets probability 0.7, the others share the rest;
- a score is the `SCRIPTED_SCORE=x` mark of the last user message, else the client's score, with
  probability 0.5 and 0.25 on each neighbour (renormalised at the range's ends);
- a continuation is a fixed sentence naming the document's last line, bounded by max_tokens (in
  words) and then cut to its last complete sentence like the embedded model's.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

from autogen_core.models import LLMMessage, RequestUsage, UserMessage

from moot.models.continuation import continuation_result
from moot.models.requests import Choose, Continue, MeasuredResult, Request, Score, choice_detail, document_text, score_detail
from moot.models.backends.scripted.replies import named, normal

SCRIPTED_CONTINUATION = "(scripted) I have a point on {about}. Let me add a second sentence to it."


def answer(request: Request, messages: Sequence[LLMMessage], script: list[str], label: Optional[str],
           letter: Optional[str], score: float, max_tokens: int) -> MeasuredResult:
    if isinstance(request, Continue):
        return _continuation(messages, max_tokens, request.sentence)
    if isinstance(request, Score):
        return _score(request, score)
    return _choice(request, script, label, letter)


def _choice(request: Choose, script: list[str], label: Optional[str], letter: Optional[str]) -> MeasuredResult:
    options = {normal(o): o for o in request.options}
    scripted = named(script[0], request.options) if script else None
    if scripted is not None:
        script.pop(0)
        chosen = scripted
    else:
        chosen = options.get(normal(label or "")) or options.get(normal(letter or "")) or request.options[0]
    rest = (1 - 0.7) / (len(request.options) - 1)
    logprobs = {o: math.log(0.7 if o == chosen else rest) for o in request.options}
    text, detail = choice_detail("scripted", logprobs)
    return MeasuredResult(content=text, usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
                          finish_reason="stop", cached=False, detail=detail)


def _score(request: Score, score: float) -> MeasuredResult:
    centre = min(max(int(round(score)), request.lo), request.hi)
    weights = {n: {0: 0.5, 1: 0.25}.get(abs(n - centre), 0.0) for n in range(request.lo, request.hi + 1)}
    logprobs = {str(n): math.log(w) for n, w in weights.items() if w}
    text, detail = score_detail("scripted", logprobs)
    return MeasuredResult(content=text, usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
                          finish_reason="stop", cached=False, detail=detail)


def _continuation(messages: Sequence[LLMMessage], max_tokens: int, sentence: bool) -> MeasuredResult:
    lines = document_text(messages).strip().splitlines()
    about = lines[-1][:60].rstrip(" :") if lines else "this"
    words = SCRIPTED_CONTINUATION.format(about=about).split(" ")
    text = " " + " ".join(words[:max_tokens])
    finish = "length" if len(words) > max_tokens else "stop"
    prompt = sum(len(str(m.content).split()) for m in messages if isinstance(m, UserMessage))
    usage = RequestUsage(prompt_tokens=prompt, completion_tokens=min(len(words), max_tokens))
    return continuation_result(text, finish, sentence, usage)
