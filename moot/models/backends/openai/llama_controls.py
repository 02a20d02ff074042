"""The embedded model's generation controls, sent to llama.cpp's llama-server in its own fields.

In process (moot.models.backends.local: client, requests) a turn samples with llama-cpp-python's chain (top-k
40, typical 1, top-p 0.95, min-p 0.05, the scenario's temperature and repeat penalty over the last
64 tokens), its seed mixed with the prompt's tokens, under logits processors
(moot.models.continuation): no newline or name first, no newline or end of text before
`min_tokens` nor before a sentence ends, no run of `no_repeat_ngram` words copied. A server that
applies none of them writes other, shorter turns (COLA: 523 generated tokens against 1,562).
llama-server takes them in fields OpenAI rejects, so they go only to an endpoint declared
`backends.openai.server: llama-server`:

- sampling: `top_k`, `min_p`, `typical_p`, `repeat_penalty`, `repeat_last_n` as in process, and
  the seed mixed with the prompt's tokens as in process (the prompt tokenized by `/tokenize` and
  sent as tokens);
- the first token: `logit_bias` banning newlines and the names' texts for one token;
- `min_tokens`: `ignore_eos` and newlines banned up to that many tokens;
- a sentence before a newline or the end: a grammar for the rest of the turn;
- `no_repeat_ngram`: llama-server's DRY sampler over the whole context, extending a run of n-1
  tokens penalised out of reach (tokens of every kind, where in process only word tokens count).

Each part is a request of its own that goes on from the text so far (the server's prompt cache
keeps the prompt evaluated once), so after the first token the random draws differ from the
embedded model's.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Mapping, Sequence

from autogen_core.models import RequestUsage

from moot.models.continuation import ends_sentence, prompt_seed
from moot.models.requests import Continue

LLAMA_SERVER = "llama-server"
SAMPLING = {"top_k": 40, "top_p": 0.95, "min_p": 0.05, "typical_p": 1.0, "repeat_penalty": 1.0,
            "repeat_last_n": 64}  # llama-cpp-python's create_completion defaults, its Llama's last_n_tokens_size
OWN = ("top_p", "repeat_penalty")  # the scenario's generation settings among them
NEWLINES = ("\n", "\n\n", "\n\n\n")
NO_REPEAT_PENALTY = 1e4  # subtracted from a logit: never sampled
WHOLE_CONTEXT = 1 << 16  # DRY's look-back in tokens (its field takes no -1 for "the context")
# No newline and no end of text until a sentence has ended (as ends_sentence reads one, save
# abbreviations): anything after a sentence end and a space or newline.
SENTENCE_GRAMMAR = r'''root ::= [^\n]* [.!?] ["')\]\u201d\u2019]* ([ \t\n] any)?
any ::= ([^\n] | "\n")*
'''

Post = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
Tokenize = Callable[[str], Awaitable[list[int]]]


def sampling(settings: Mapping[str, Any]) -> dict[str, Any]:
    """llama-server's sampling fields for the embedded model's chain with these settings."""
    return {**SAMPLING, **{k: settings[k] for k in OWN if settings.get(k) is not None}, "cache_prompt": True}


def banned(texts: Sequence[str]) -> dict[str, bool]:
    """A `logit_bias` banning the tokens of each text (llama-server tokenizes a key that is no number)."""
    return {text: False for text in texts}


def first_words(words: Sequence[str]) -> list[str]:
    """The texts whose tokens may not open a turn: each word after a space, and its first word
    (moot.models.continuation.first_tokens)."""
    found: dict[str, None] = {}
    for text in words:
        for variant in (text.strip(), text.strip().split(" ")[0]):
            if variant:
                found[" " + variant] = None
    return list(found)


def no_repeat(n: int) -> dict[str, Any]:
    """DRY fields that keep a reply from extending a run of n-1 tokens found in its context."""
    return {"dry_multiplier": NO_REPEAT_PENALTY, "dry_base": 1.0, "dry_allowed_length": n - 1,
            "dry_penalty_last_n": WHOLE_CONTEXT, "dry_sequence_breakers": ["\n"]}


async def controlled_turn(post: Post, tokenize: Tokenize, prompt: str, request: Continue,
                          args: Mapping[str, Any]) -> tuple[str, str, RequestUsage]:
    """A continuation of `prompt` under `request`'s rules through llama-server's completions
    (`args`: the call's settings, `sampling`'s fields among them):
    its text, finish reason ("stop" or "length") and usage, in up to three requests (the first
    token, up to min_tokens, the rest)."""
    tokens = await tokenize(prompt)
    limit = int(args.get("max_tokens") or 0)
    common = {**{k: v for k, v in args.items() if k != "seed"}, "stop": list(request.stop),
              **(no_repeat(request.no_repeat_ngram) if request.no_repeat_ngram else {})}
    text, done, finish = "", 0, "stop"
    for part in parts(request):
        if part == "rest" and request.sentence and request.min_tokens and not ends_sentence(text):
            extra: dict[str, Any] = {"grammar": SENTENCE_GRAMMAR}
        elif part == "rest":
            extra = {}
        else:
            names = first_words(request.ban_first) if part == "first" else []
            extra = {"logit_bias": banned([*NEWLINES, *names]), "ignore_eos": bool(request.min_tokens)}
        want = 1 if part == "first" else request.min_tokens - done if part == "min" else limit - done
        if want <= 0 and (part != "rest" or limit):
            continue
        seed = {"seed": prompt_seed(int(args["seed"]), tokens + ([done] if done else []))} \
            if args.get("seed") is not None else {}
        reply = await post({**common, **extra, **seed, "prompt": [*tokens, text] if text else tokens,
                            **({"max_tokens": want} if want > 0 else {})})
        choice = (reply.get("choices") or [{}])[0]
        piece = choice.get("text") if isinstance(choice.get("text"), str) else ""
        made = (reply.get("usage") or {}).get("completion_tokens")
        text, done = text + piece, done + (made if isinstance(made, int) and made >= 0 else want)
        finish = "length" if choice.get("finish_reason") == "length" else "stop"
        if finish == "stop":
            break
    if limit and done >= limit:
        finish = "length"
    return text, finish, RequestUsage(prompt_tokens=len(tokens), completion_tokens=done)


def parts(request: Continue) -> list[str]:
    """The requests a turn takes: the first token alone when names are banned there or no
    min_tokens bans newlines with it, the tokens up to min_tokens, the rest."""
    first = ["first"] if request.ban_first or not request.min_tokens else []
    return [*first, *(["min"] if request.min_tokens > 1 or (request.min_tokens and not first) else []), "rest"]
