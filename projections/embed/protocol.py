"""The embedder protocol: what the vector projection needs from a model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

__all__ = ["Embedder"]


@runtime_checkable
class Embedder(Protocol):
    """A text embedding model.

    ``name`` is a stable id of the model: the vectors a different name made are
    rebuilt. ``embed`` returns a ``(len(texts), dim)`` float32 numpy array
    whose rows are L2-normalised (a zero row for a text it cannot embed).
    An embedder may also declare ``min_cosine``: the cosine below which a
    document is not a semantic candidate (default 0.4, measured for the
    shipped model; models differ in their cosine scale).
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Any:
        """The texts' vectors, ``(n, dim)`` float32, rows L2-normalised."""
        ...
