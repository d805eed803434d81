"""Per-field vectors of LangGraph items, scored as LangGraph's own stores score them.

With an ``index`` that has an ``embed``, LangGraph's stores embed each text
an item's index fields select (``get_text_at_path`` of each path: ``$`` is
the whole value's JSON, a path that selects several texts gives a vector
each) and score a query against an item by the highest cosine similarity
between the query's vector (``embed_query``) and the item's vectors. Every
item with a vector gets its cosine, best first (so a query never hides an
item, and the cosine may be low or negative); the items without one
(``index=False``, or no text at their fields) follow, score None.

:class:`FieldVectors` does the same for ``MemlogStore``, so its scores are
the cosines ``InMemoryStore`` and ``SqliteStore`` report. The vectors are
derived data held in this process's memory only, never written under the
data directory: a put embeds its item's texts before anything is written,
a delete drops them, and after a reopen a search embeds, once, the items it
has not seen yet. numpy is needed (the ``semantic`` extra).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import get_text_at_path, tokenize_path

from .documents import Namespace, Stored

__all__ = ["FieldVectors", "field_texts"]

Pair = tuple[Namespace, str]


def field_texts(value: Mapping[str, Any], fields: Sequence[str]) -> list[str]:
    """The texts LangGraph embeds for a value indexed on ``fields``, in order."""
    texts: list[str] = []
    for path in fields:
        texts.extend(get_text_at_path(dict(value), path if path == "$" else tokenize_path(path)))
    return texts


def _digest(texts: list[str]) -> str:
    raw = json.dumps(texts, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest()


class FieldVectors:
    """The vectors of one store's items, by ``(namespace, key)``, each row
    tagged with the digest of the texts it was made of (a changed value is
    embedded again)."""

    def __init__(self, embeddings: Embeddings) -> None:
        self.embeddings = embeddings
        self._rows: dict[Pair, tuple[str, Any]] = {}

    def _embed(self, texts: list[str]) -> Any:
        import numpy as np

        if not texts:
            return np.zeros((0, 0))
        return np.asarray(self.embeddings.embed_documents(texts), dtype=np.float64)

    def prepare(self, entries: Iterable[tuple[Pair, list[str]]]) -> dict[Pair, tuple[str, Any]]:
        """The rows of ``entries`` (embedded in one call, reusing the rows
        already held for the same texts), not yet remembered."""
        wanted = [(pair, texts, _digest(texts)) for pair, texts in entries]
        missing = [(pair, texts, digest) for pair, texts, digest in wanted
                   if self._rows.get(pair, ("", None))[0] != digest]
        flat = self._embed([text for _, texts, _ in missing for text in texts])
        rows = {pair: self._rows[pair] for pair, _, digest in wanted
                if self._rows.get(pair, ("", None))[0] == digest}
        start = 0
        for pair, texts, digest in missing:
            rows[pair] = (digest, flat[start: start + len(texts)])
            start += len(texts)
        return rows

    def remember(self, rows: Mapping[Pair, tuple[str, Any]]) -> None:
        """Hold rows that :meth:`prepare` made (after their items were saved)."""
        self._rows.update(rows)

    def forget(self, pairs: Iterable[Pair]) -> None:
        """Drop the rows of deleted items."""
        for pair in pairs:
            self._rows.pop(pair, None)

    def query_vectors(self, queries: Iterable[str]) -> dict[str, Any]:
        """Each distinct query's vector (``embed_query``, as ``InMemoryStore`` does)."""
        import numpy as np

        return {q: np.asarray(self.embeddings.embed_query(q), dtype=np.float64)
                for q in dict.fromkeys(queries)}

    def rank(self, candidates: list[Stored], query: Any) -> list[tuple[Stored, float | None]]:
        """The candidates by their best cosine with ``query``, best first (ties in
        store order), then those without a vector, score None."""
        entries = [((item.namespace, item.key), field_texts(item.value, item.index))
                   for item in candidates if item.index is not None]
        rows = self.prepare(entries)
        self.remember(rows)
        scores = {pair: _best_cosine(query, vectors) for pair, (_, vectors) in rows.items()
                  if len(vectors)}
        scored = [(item, scores[item.namespace, item.key]) for item in candidates
                  if (item.namespace, item.key) in scores]
        scored.sort(key=lambda pair: -pair[1])
        rest = [(item, None) for item in candidates if (item.namespace, item.key) not in scores]
        return [*scored, *rest]


def _best_cosine(query: Any, vectors: Any) -> float:
    """The highest cosine similarity of ``query`` with a row of ``vectors``
    (0 for a zero vector, as LangGraph's stores count it)."""
    import numpy as np

    norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(query)
    dots = vectors @ query
    cosines = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    return float(cosines.max())
