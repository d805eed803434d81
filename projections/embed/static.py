"""The shipped static embedding model: a vector per WordPiece token, averaged.

The model file (made by ``tools/ops/make_static_model.py``, see its doc for how) is::

    b"MEMLOGSE" | u32 header length | header (JSON) | zero padding to 64 | float16 matrix

The header names the model, its dimension, the dtype and the vocabulary (the
WordPiece tokens, in id order). Row ``i`` of the ``(len(vocab), dim)``
matrix is token ``i``'s vector, its weight already folded in. A text's vector
is the mean of its tokens' rows, L2-normalised (a text with no known token is
the zero vector). Needs numpy, imported when the first text is embedded (or
a model written): opening a store reads the header alone (name, dimension),
so a command that embeds nothing never imports numpy nor builds the matrix.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .tokenizer import WordPiece

__all__ = ["MAGIC", "MODEL_PATH", "StaticEmbedder", "read_model", "write_model"]

MAGIC = b"MEMLOGSE"
MODEL_PATH = Path(__file__).parent / "model" / "minilm-static.bin"
_ALIGN = 64
_LEN = struct.Struct("<I")
_FEW_TEXTS = 4  # up to this many texts a call, the float32 matrix is not built for them


def write_model(header: dict[str, Any], matrix: Any) -> bytes:
    """The bytes of a model file (deterministic: sorted keys, no time stamps)."""
    import numpy as np

    raw = json.dumps(header, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode()
    head = MAGIC + _LEN.pack(len(raw)) + raw
    head += b"\0" * (-len(head) % _ALIGN)
    return head + np.ascontiguousarray(matrix, dtype="<f2").tobytes()


def read_model(data: bytes) -> tuple[dict[str, Any], Any]:
    """The header and the float16 matrix of a model file's bytes."""
    import numpy as np

    header, start = _read_header(data)
    rows, dim = len(header["vocab"]), int(header["dim"])
    matrix = np.frombuffer(data, dtype="<f2", count=rows * dim, offset=start).reshape(rows, dim)
    return header, matrix


def _read_header(data: bytes) -> tuple[dict[str, Any], int]:
    """A model file's header and the offset of its matrix."""
    if data[:8] != MAGIC:
        raise ValueError("not a memlog static embedding model")
    (length,) = _LEN.unpack_from(data, 8)
    header: dict[str, Any] = json.loads(data[12 : 12 + length])
    return header, 12 + length + (-(12 + length) % _ALIGN)


class StaticEmbedder:
    """An :class:`~projections.embed.Embedder` over a static model file: its
    name and dimension come from the header; the tokenizer and the float32
    matrix are built on first use (numpy imported then)."""

    def __init__(self, path: Path = MODEL_PATH) -> None:
        data = path.read_bytes()
        header, _ = _read_header(data)
        self.name: str = f"{header['name']}-{hashlib.sha256(data).hexdigest()[:12]}"
        self.dim: int = int(header["dim"])
        self._data: bytes | None = data
        self._vocab: list[str] = header["vocab"]
        self._tokenizer: WordPiece | None = None
        self._weights: Any = None  # the float32 matrix, once a batch needs it
        self._half: Any = None  # the file's float16 rows, until then
        self._building = threading.Lock()

    @property
    def tokenizer(self) -> WordPiece:
        """The WordPiece tokenizer of the model's vocabulary (built once)."""
        if self._tokenizer is None:
            with self._building:
                if self._tokenizer is None:
                    self._tokenizer = WordPiece(self._vocab)
        return self._tokenizer

    def _rows(self, texts: int) -> tuple[Any, bool]:
        """The matrix to gather from, and whether its rows are the file's float16
        ones (to be widened per gather): a few texts (a query) gather from the
        file's rows; a larger batch builds the float32 matrix once, used from
        then on. The values are the same either way."""
        if self._weights is None:
            import numpy as np

            with self._building:
                if self._weights is None:
                    assert self._data is not None
                    if self._half is None:
                        self._half = read_model(self._data)[1]
                    if texts <= _FEW_TEXTS:
                        return self._half, True
                    self._weights = self._half.astype(np.float32)
                    self._data = self._half = None
        return self._weights, False

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
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        (matrix, half), encode = self._rows(len(texts)), self.tokenizer.encode
        for i, text in enumerate(texts):
            ids = encode(text)
            if ids:  # one small gather per text beats one large gather and reduceat;
                # take() gathers a list a third faster than indexing, the same rows
                rows = matrix.take(ids, axis=0)
                (rows.astype(np.float32) if half else rows).sum(axis=0, out=out[i])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)
