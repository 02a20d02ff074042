"""The embedded model's vocabulary: classes of tokens, and tokenizing a document once per paragraph.

Classes (`token_classes`) come from one pass over the vocabulary, each token's text as
llama.cpp writes it alone (`llama_token_to_piece`; for Gemma's 262k tokens read in one call, 0.07 s
against 0.44 s token by token, a visible part of every embedded run's start).

Tokenizing:
llama.cpp's tokenizer takes ~5-15 ms for a conference document of 6 kB here, and every call
tokenizes its whole prompt (a score question its prompt once per option): hundreds of times per
conference. When no token of the vocabulary holds a newline together with another character
(Gemma's), no merge crosses the edge of a run of newlines, so a text's tokens are its pieces'
tokens, pieces cut at those edges (with add_space_prefix off, a piece tokenizes alone as it does
inside the text). Each distinct piece is then tokenized once per process. For any other vocabulary
the whole text is tokenized, as before.
"""

from __future__ import annotations

import ctypes
import re
from collections import OrderedDict
from functools import lru_cache
from typing import Any

import numpy as np

PIECES = re.compile(r"\n+|[^\n]+")
ALNUM = re.compile(r"[^\W_]")  # a character for which str.isalnum() holds (checked over all of Unicode)
KEPT = 4096  # pieces remembered (least recently used go first)
PIECE_BYTES = 256  # the longest token text read alone (Gemma's longest: 48 bytes)


class Tokenizer:
    """`tokenize(text)` of one model, equal to `llm.tokenize(text.encode())` (no special tokens)."""

    def __init__(self, llm: Any, apart: bool):
        self.llm, self.apart = llm, apart
        self.pieces: OrderedDict[str, list[int]] = OrderedDict()

    def __call__(self, text: str, add_bos: bool = True) -> list[int]:
        if not self.apart:
            tokens: list[int] = self.llm.tokenize(text.encode("utf-8"), add_bos=add_bos)
            return tokens
        found = [self.llm.token_bos()] if add_bos and self.adds_bos() else []
        for piece in PIECES.findall(text):
            found += self.piece(piece)
        return found

    def piece(self, text: str) -> list[int]:
        tokens = self.pieces.get(text)
        if tokens is None:
            tokens = self.pieces[text] = self.llm.tokenize(text.encode("utf-8"), add_bos=False)
            if len(self.pieces) > KEPT:
                self.pieces.popitem(last=False)
        else:
            self.pieces.move_to_end(text)
        return tokens

    @lru_cache(maxsize=1)
    def adds_bos(self) -> bool:
        return bool(self.llm.tokenize(b"", add_bos=True) == [self.llm.token_bos()])


def pieces(llm: Any) -> list[str]:
    """Each token's text, written alone without special tokens (as `llm.detokenize([token])`,
    whose 32-byte buffer leaves the few longer tokens empty). Read in one pass where it can be
    (`pieces_at_once`), else a call per token (~0.4 s for Gemma's 262k)."""
    import llama_cpp

    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    buffer = ctypes.create_string_buffer(PIECE_BYTES)
    return pieces_at_once(llm, vocab, buffer) or [piece(vocab, token, buffer) for token in range(llm.n_vocab())]


def piece(vocab: Any, token: int, buffer: Any) -> str:
    import llama_cpp

    n = llama_cpp.llama_token_to_piece(vocab, token, buffer, PIECE_BYTES, 0, False)
    return str(buffer.raw[:max(n, 0)].decode("utf-8", "ignore"))


def pieces_at_once(llm: Any, vocab: Any, buffer: Any) -> list[str] | None:
    """Every token's text from one detokenizing call over the whole vocabulary, each token followed
    by the one that writes a NUL byte, split at the NULs (~0.05 s). None where the vocabulary has
    no such token, where a NUL is written elsewhere, or where a sample of tokens read alone differs
    (a vocabulary whose detokenizing does more than join its tokens' texts)."""
    import llama_cpp

    nul = llm.tokenize(b"\0", add_bos=False, special=False)
    if len(nul) != 1 or piece(vocab, nul[0], buffer) != "\0":
        return None
    n = llm.n_vocab()
    ids = np.empty(2 * n, dtype=np.int32)
    ids[0::2], ids[1::2] = np.arange(n, dtype=np.int32), nul[0]
    pointer = ids.ctypes.data_as(ctypes.POINTER(llama_cpp.llama_token))
    size = 16 * n
    while True:
        text = ctypes.create_string_buffer(size)
        written = llama_cpp.llama_detokenize(vocab, pointer, len(ids), text, size, False, False)
        if written >= 0:
            break
        size = -written
    parts = text.raw[:written].split(b"\0")
    if len(parts) != n + 2:  # a NUL after each token, and the NUL token's own
        return None
    found = [p.decode("utf-8", "ignore") for p in parts[:nul[0]]] + ["\0"] + \
        [p.decode("utf-8", "ignore") for p in parts[nul[0] + 2:n + 1]]
    if any(found[token] != piece(vocab, token, buffer) for token in range(0, n, max(n // 512, 1))):
        return None
    return found


class TokenClasses:
    """Vocabulary masks read once per model: `word` (a letter or digit in the text), `newline`
    (text starts with a newline after spaces), `digit` (text starts with a digit: it would
    continue a number); `newlines_apart`: no token holds a newline with another character."""

    def __init__(self, llm: Any):
        texts = pieces(llm)
        self.word = np.array([ALNUM.search(t) is not None for t in texts])
        self.newline = np.flatnonzero([t.lstrip(" ").startswith("\n") for t in texts])
        self.digit = np.array([t[:1].isdigit() for t in texts])
        self.newlines_apart = not any("\n" in t and t.strip("\n") for t in texts)


@lru_cache(maxsize=4)
def token_classes(llm: Any) -> TokenClasses:
    return TokenClasses(llm)


def newlines_apart(llm: Any) -> bool:
    """Whether the vocabulary is SentencePiece's (merges only, no pre-splitting by patterns that
    look ahead), puts no space before a text, and has no token that holds a newline with another
    character."""
    import llama_cpp

    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    return (llama_cpp.llama_vocab_type(vocab) == llama_cpp.LLAMA_VOCAB_TYPE_SPM
            and llm.metadata.get("tokenizer.ggml.add_space_prefix") == "false"
            and token_classes(llm).newlines_apart)


@lru_cache(maxsize=4)
def tokenizer_of(llm: Any) -> Tokenizer:
    return Tokenizer(llm, newlines_apart(llm))
