"""Semantic search: embedders and the vector projection.

- :class:`Embedder`: the protocol a model implements (bring your own: pass it
  to :class:`~projections.Projections` as ``embedder=``);
- :func:`default_embedder`: the static model shipped in the package
  (distilled from all-MiniLM-L6-v2 by ``tools/ops/make_static_model.py``), or None
  when numpy is not installed (``pip install memlog[semantic]``);
- :class:`VectorIndex`: the vector projection, rebuilt from the log like the
  others, searched by brute-force cosine as of any seq.

numpy is imported only when an embedder is loaded, so importing
:mod:`projections` never needs it.
"""

from __future__ import annotations

import functools

from .protocol import Embedder
from .store import VECTOR_DBS, VectorIndex, VectorOp, purge_without_model

__all__ = [
    "VECTOR_DBS",
    "Embedder",
    "VectorIndex",
    "VectorOp",
    "default_embedder",
    "numpy_available",
    "purge_without_model",
]


def numpy_available() -> bool:
    """Whether numpy can be imported (the ``semantic`` extra)."""
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


@functools.cache
def default_embedder() -> Embedder | None:
    """The shipped static model (loaded once per process), or None without numpy."""
    if not numpy_available():
        return None
    from .static import StaticEmbedder

    return StaticEmbedder()
