"""BERT's WordPiece tokenizer in pure Python (no dependency).

The same steps as BERT's uncased tokenizer (and Hugging Face's
``BertTokenizer`` with ``do_lower_case=True``):

1. basic tokenization: drop control characters and U+FFFD, turn whitespace
   into spaces, put spaces around CJK ideographs, lower-case, strip accents
   (NFD, then drop combining marks), split on whitespace and punctuation;
2. WordPiece: each word is cut greedily, longest match first, into pieces of
   the vocabulary, later pieces prefixed with ``##``; a word that cannot be cut
   (or longer than 100 characters) is ``[UNK]``.

Words repeat, so a word's ids are cached (bounded).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

__all__ = ["WordPiece", "basic_tokens"]

_MAX_WORD = 100
_CACHE = 200_000


def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True  # BERT counts every non-alphanumeric ASCII character as punctuation
    return unicodedata.category(ch).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def _clean(text: str) -> str:
    out = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD:
            continue
        cat = unicodedata.category(ch)
        if ch in " \t\n\r" or cat == "Zs":
            out.append(" ")
        elif cat in ("Cc", "Cf"):
            continue
        elif _is_cjk(cp):
            out.append(f" {ch} ")
        else:
            out.append(ch)
    return "".join(out)


def _split_word(word: str) -> list[str]:
    """Lower-case, strip accents, split on punctuation."""
    word = unicodedata.normalize("NFD", word.lower())
    word = "".join(ch for ch in word if unicodedata.category(ch) != "Mn")
    if word.isalnum():
        return [word] if word else []
    pieces: list[str] = []
    current: list[str] = []
    for ch in word:
        if _is_punctuation(ch):
            if current:
                pieces.append("".join(current))
                current = []
            pieces.append(ch)
        else:
            current.append(ch)
    if current:
        pieces.append("".join(current))
    return pieces


_ASCII_DROP = bytes(c for c in range(32) if chr(c) not in "\t\n\r") + b"\x7f"  # controls BERT drops


def _words(text: str) -> list[str]:
    """``text`` cleaned and split on whitespace (before lower-casing and punctuation)."""
    if text.isascii():  # no accents, no CJK, only ASCII controls to drop
        # bytes.translate deletes with a table (str.translate with a dict looked
        # each distinct character up in it on every call): 7.2 to 5.65 us a text.
        return text.encode("ascii").translate(None, _ASCII_DROP).decode("ascii").split()
    return _clean(text).split()


def basic_tokens(text: str) -> list[str]:
    """BERT's basic tokenization of ``text`` (uncased)."""
    return [piece for word in _words(text) for piece in _split_word(word)]


class WordPiece:
    """Text to vocabulary ids: basic tokenization, then greedy WordPiece."""

    def __init__(self, vocab: Sequence[str], unk: str = "[UNK]") -> None:
        self.ids = {token: i for i, token in enumerate(vocab)}
        self.unk = self.ids[unk]
        self._max_piece = max(len(t) for t in vocab)
        self._cache: dict[str, tuple[int, ...]] = {}

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``'s pieces (no ``[CLS]``/``[SEP]``)."""
        out: list[int] = []
        cache = self._cache
        for word in _words(text):
            ids = cache.get(word)
            if ids is None:
                ids = tuple(i for piece in _split_word(word) for i in self._word(piece))
                if len(cache) >= _CACHE:
                    cache.clear()
                cache[word] = ids
            out.extend(ids)
        return out

    def _word(self, word: str) -> tuple[int, ...]:
        """Greedy longest-match-first WordPiece of one basic token."""
        if len(word) > _MAX_WORD:
            return (self.unk,)
        ids = self.ids
        out = []
        start = 0
        while start < len(word):
            end = min(len(word), start + self._max_piece)
            found = -1
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                found = ids.get(piece, -1)
                if found >= 0:
                    break
                end -= 1
            if found < 0:
                return (self.unk,)
            out.append(found)
            start = end
        return tuple(out)
