"""LangGraph's ``IndexConfig`` embedding as memlog's embedder.

``MemlogStore(path, index={"dims": 1536, "embed": ...})`` gives the memlog
it opens this embedder, so memlog's hybrid search (and its vector
projection) uses the model the graph was configured with. ``embed`` is what
LangGraph accepts: a LangChain ``Embeddings``, a function from texts to
vectors, or a provider string (``langchain`` resolves it). The vectors are
L2-normalised here, as memlog's protocol asks; numpy is needed (the
``semantic`` extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.store.base import IndexConfig, ensure_embeddings

from eventstore import InvalidInputError

__all__ = ["IndexEmbedder"]


def _model_name(embed: object) -> str:
    if isinstance(embed, str):
        return embed
    named = getattr(embed, "model", None) or getattr(embed, "model_name", None)
    kind = getattr(embed, "__qualname__", None) or type(embed).__qualname__
    return f"{kind}:{named}" if isinstance(named, str) else str(kind)


class IndexEmbedder:
    """memlog's :class:`projections.Embedder` made of an ``IndexConfig``'s
    ``embed`` and ``dims``; its ``name`` (which memlog keeps beside the
    vectors, rebuilding them when it changes) is ``langgraph:<model>:<dims>``."""

    def __init__(self, index: IndexConfig) -> None:
        dims = index.get("dims")
        if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
            raise InvalidInputError("an index with 'embed' needs 'dims', a positive integer")
        self.dim: int = dims
        self.name: str = f"langgraph:{_model_name(index.get('embed'))}:{dims}"
        self._embeddings = ensure_embeddings(index.get("embed"))

    def embed(self, texts: Sequence[str]) -> Any:
        """``(len(texts), dim)`` float32, rows L2-normalised (zero rows stay zero)."""
        import numpy as np

        rows = self._embeddings.embed_documents(list(texts)) if texts else []
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if rows:
            out[:] = np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
