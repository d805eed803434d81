"""The shipped static embedding model: a vector per WordPiece token, averaged.

The model file (made by ``tools/ops/make_static_model.py``, see its doc for how) is::

    b"MEMLOGSE" | u32 header length | header (JSON) | zero padding to 64 | float16 matrix

The header names the model, its dimension, the dtype and the vocabulary (the
WordPiece tokens, in id order). Row ``i`` of the ``(len(vocab), dim)``
matrix is token ``i``'s vector, its weight already folded in. A text's vector
is the mean of its tokens' rows, L2-normalised (a text with no known token is
the zero vector). Needs numpy, imported here and nowhere at import time of
:mod:`projections`.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .tokenizer import WordPiece

__all__ = ["MAGIC", "MODEL_PATH", "StaticEmbedder", "read_model", "write_model"]

MAGIC = b"MEMLOGSE"
MODEL_PATH = Path(__file__).parent / "model" / "minilm-static.bin"
_ALIGN = 64
_LEN = struct.Struct("<I")


def write_model(header: dict[str, Any], matrix: Any) -> bytes:
    """The bytes of a model file (deterministic: sorted keys, no time stamps)."""
    raw = json.dumps(header, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode()
    head = MAGIC + _LEN.pack(len(raw)) + raw
    head += b"\0" * (-len(head) % _ALIGN)
    return head + np.ascontiguousarray(matrix, dtype="<f2").tobytes()


def read_model(data: bytes) -> tuple[dict[str, Any], Any]:
    """The header and the float16 matrix of a model file's bytes."""
    if data[:8] != MAGIC:
        raise ValueError("not a memlog static embedding model")
    (length,) = _LEN.unpack_from(data, 8)
    header: dict[str, Any] = json.loads(data[12 : 12 + length])
    start = 12 + length + (-(12 + length) % _ALIGN)
    rows, dim = len(header["vocab"]), int(header["dim"])
    matrix = np.frombuffer(data, dtype="<f2", count=rows * dim, offset=start).reshape(rows, dim)
    return header, matrix


class StaticEmbedder:
    """An :class:`~projections.embed.Embedder` over a static model file."""

    def __init__(self, path: Path = MODEL_PATH) -> None:
        data = path.read_bytes()
        header, matrix = read_model(data)
        self.name: str = f"{header['name']}-{hashlib.sha256(data).hexdigest()[:12]}"
        self.dim: int = int(header["dim"])
        self.tokenizer = WordPiece(header["vocab"])
        self._matrix = matrix.astype(np.float32)

    def knows(self, word: str) -> bool:
        """Whether the model holds ``word`` (lower-case) as a word: whole in its
        vocabulary, or its longest vocabulary prefix covering 70 % of it
        ("invoice" for "invoiced"). A word cut into short pieces (an unknown
        name, a code, a typo) carries no meaning the model learnt."""
        ids = self.tokenizer.ids
        if word in ids:
            return True
        shortest = max(1, -(-7 * len(word) // 10))
        return any(word[:k] in ids for k in range(len(word) - 1, shortest - 1, -1))

    def embed(self, texts: Sequence[str]) -> Any:
        """``(len(texts), dim)`` float32, rows L2-normalised (zero for a text
        with no token)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        matrix, encode = self._matrix, self.tokenizer.encode
        for i, text in enumerate(texts):
            ids = encode(text)
            if ids:  # one small gather per text beats one large gather and reduceat;
                # take() gathers a list a third faster than indexing, the same rows
                matrix.take(ids, axis=0).sum(axis=0, out=out[i])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)
