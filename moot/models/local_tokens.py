"""Tokenizing a growing document once per paragraph.

llama.cpp's tokenizer takes ~5-15 ms for a conference document of 6 kB here, and every call
tokenizes its whole prompt (a score question its prompt once per option): hundreds of times per
conference. When no token of the vocabulary holds a newline together with another character
(Gemma's), no merge crosses the edge of a run of newlines, so a text's tokens are its pieces'
tokens, pieces cut at those edges (with add_space_prefix off, a piece tokenizes alone as it does
inside the text). Each distinct piece is then tokenized once per process. For any other vocabulary
the whole text is tokenized, as before.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from functools import lru_cache
from typing import Any

PIECES = re.compile(r"\n+|[^\n]+")
KEPT = 4096  # pieces remembered (least recently used go first)


class Tokenizer:
    """`tokenize(text)` of one model, equal to `llm.tokenize(text.encode())` (no special tokens)."""

    def __init__(self, llm: Any, apart: bool):
        self.llm, self.apart = llm, apart
        self.pieces: OrderedDict[str, list[int]] = OrderedDict()

    def __call__(self, text: str, add_bos: bool = True) -> list[int]:
        if not self.apart:
            return self.llm.tokenize(text.encode("utf-8"), add_bos=add_bos)
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
        return self.llm.tokenize(b"", add_bos=True) == [self.llm.token_bos()]


def newlines_apart(llm: Any) -> bool:
    """Whether the vocabulary is SentencePiece's (merges only, no pre-splitting by patterns that
    look ahead), puts no space before a text, and has no token that holds a newline with another
    character (one pass over the vocabulary)."""
    import llama_cpp

    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    if (llama_cpp.llama_vocab_type(vocab) != llama_cpp.LLAMA_VOCAB_TYPE_SPM
            or llm.metadata.get("tokenizer.ggml.add_space_prefix") != "false"):
        return False
    for i in range(llm.n_vocab()):
        text = llama_cpp.llama_vocab_get_text(vocab, i)
        if b"\n" in text and text.strip(b"\n"):
            return False
    return True


@lru_cache(maxsize=4)
def tokenizer_of(llm: Any) -> Tokenizer:
    return Tokenizer(llm, newlines_apart(llm))
