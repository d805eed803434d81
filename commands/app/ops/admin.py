"""Use cases that keep the store: decay parameters, replay, verify and stats."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from eventstore import DecayApplied, InvalidInputError, VerifyResult, now_micros
from projections import DecayParams

from ..store.store import Store
from ..store.validate import check_choice, check_rates, check_unit, to_time
from ..store.writer import SYSTEM_STREAM

__all__ = [
    "PROJECTIONS", "apply_decay", "decay_params", "dir_size", "disk_sizes", "params_dict", "replay", "stats",
    "verify",
]

PROJECTIONS = ("views", "search", "vectors")


def decay_params(store: Store, as_of: int | None = None) -> DecayParams:
    """The decay parameters in force (as of a seq, if given)."""
    with store.read(as_of) as views:
        return views.decay_params()


def apply_decay(store: Store, as_of: datetime | str | int | None = None,
                rates: dict[str, float] | None = None, floor: float | None = None) -> int:
    """Emit ``decay.applied``: the parameters in force from ``as_of`` on.

    Only what is given changes: each rate in ``rates`` and, if given, the floor;
    every other rate, the floor and the boosts stay as they are in force now.
    """
    when = to_time(as_of, "as_of") or now_micros()
    given = check_rates(rates)
    value = None if floor is None else check_unit(floor, "floor")
    current = decay_params(store)
    event = DecayApplied(as_of=when, rates={**current.rates, **given},
                         floor=current.floor if value is None else value,
                         access_boost=current.access_boost, importance_boost=current.importance_boost)
    store.writer.append(SYSTEM_STREAM, lambda: [event])
    return store.writer.last_seq


def params_dict(params: DecayParams) -> dict[str, Any]:
    """Decay parameters as a JSON-ready mapping (``decay --show``)."""
    return msgspec.to_builtins(params)  # type: ignore[no-any-return]


def verify(store: Store) -> VerifyResult:
    """Walk the log's hash chain."""
    return store.log.verify()


def replay(store: Store, projections: Iterable[str] = PROJECTIONS,
           progress: Callable[[int], None] | None = None) -> int:
    """Rebuild projections from the log; returns the seq they were rebuilt to.

    All (the default) rebuild into a fresh directory swapped in atomically;
    ``search`` alone rebuilds the search shards from the views; ``vectors``
    alone re-embeds every document from the log (and rewrites the vector file,
    so the old bytes go). The views cannot be rebuilt alone: they, the search
    index and the vectors live in one projection directory, swapped together.
    """
    store.check_writable("a replay")
    names = set(projections)
    for name in names:
        check_choice(name, "projection", PROJECTIONS)
    if names == {"search"}:
        return store.proj.rebuild_search(progress)
    if names == {"vectors"}:
        return store.proj.rebuild_vectors(progress)
    if names == {"search", "vectors"}:
        store.proj.rebuild_search(progress)
        return store.proj.rebuild_vectors(progress)
    if names == {"views"}:
        raise InvalidInputError("the views are rebuilt together with search (one directory, swapped "
                                "whole): run `memlog replay`, or `--projection search` for search alone")
    return store.proj.replay(progress=progress)


def stats(store: Store) -> dict[str, Any]:
    """Event count, head seq, counts by kind, sizes on disk, checkpoints and the
    events a projection skipped (seq, type, error class, projection; never content)."""
    head = store.log.head()
    with store.read() as views:
        counters = views.counters()
        checkpoint = views.checkpoint()
    skipped = [msgspec.to_builtins(s) for s in store.proj.skipped()]
    assert store.proj.search_index is not None
    sizes = disk_sizes(store)
    checkpoints = {"views": checkpoint, "search": store.proj.search_index.checkpoint()}
    return {
        "events": head.seq, "head_seq": head.seq, "head_hash": head.hash,
        "entries": counters.get("entries", 0),
        "by_kind": {k[5:]: v for k, v in counters.items() if k.startswith("kind:")},
        "by_type": {k[5:]: v for k, v in counters.items() if k.startswith("type:")},
        "bytes_on_disk": sizes, "checkpoints": checkpoints,
        "embedder": _vector_stats(store, checkpoints),
        "skipped": skipped,
    }


def _vector_stats(store: Store, checkpoints: dict[str, int]) -> dict[str, Any] | None:
    """The embedder's name and dimension and the vectors held (0 before the
    first search creates them); the vectors' checkpoint goes into
    ``checkpoints``. None without an embedder."""
    embedder = store.proj.embedder
    if embedder is None:
        return None
    vectors = store.proj.vectors
    checkpoints["vectors"] = 0 if vectors is None else vectors.checkpoint()
    return {"name": embedder.name, "dim": embedder.dim, "vectors": 0 if vectors is None else len(vectors)}


def disk_sizes(store: Store) -> dict[str, int]:
    """Bytes on disk of each part of the data directory: the projections' and the log."""
    sizes = {name: dir_size(store.proj.root / name) for name in ("views", "search", "vectors")}
    sizes["log"] = dir_size(store.data_dir / "log")
    return sizes


def dir_size(path: Path) -> int:
    """Bytes of the files under ``path`` (0 when it does not exist)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0
