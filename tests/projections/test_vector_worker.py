"""A replay whose vectors are embedded by a worker process (``VECTOR_WORKER_EVENTS``)
builds the same projections as one that embeds in-process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import projections.runner as runner
from eventstore import EventLog
from projections import Projections
from projections.embed import VectorIndex
from tests.projections.history import History

pytest.importorskip("numpy")

STEPS: list[tuple[Any, ...]] = [
    *[("entry", i % 3, kind, ["postgres", "cache", word])
      for i, (kind, word) in enumerate([("message", "alpha"), ("lesson", "queue"), ("decision", "retry"),
                                        ("finding", "index"), ("task", "deploy"),
                                        ("handoff", "schema")] * 4)],
    ("update", 3, True), ("delete", 5), ("redact", 7), ("compact", 1), ("remember", "alice", "k1", "cache"),
    ("remember", "alice", "k1", "queue"), ("forget", "alice", "k1"), ("summarise", 0, 2),
    ("catch_up",), ("entry", 2, "message", ["latency"]),
]


def _replay_dump(root: Path, log: EventLog, worker: bool) -> dict[str, Any]:
    proj = Projections(root, log, shards=2)
    started: list[int] = []
    start = VectorIndex.start_worker
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(runner, "VECTOR_WORKER_EVENTS", 0 if worker else 1 << 62)
            patch.setattr(VectorIndex, "start_worker", lambda self, *a: started.append(1) or start(self, *a))
            proj.replay()
        assert len(started) == int(worker)
        proj.catch_up(search=True)
        assert proj.views is not None and proj.vectors is not None
        return {"views": proj.views.dump(), "vectors": proj.vectors.dump(),
                "checkpoint": proj.vectors.checkpoint()}
    finally:
        proj.close()


def test_replay_with_vector_worker_equals_in_process(tmp_path: Path) -> None:
    with EventLog.open(tmp_path / "log") as log:
        proj = Projections(tmp_path, log, shards=2)
        try:
            history = History(log, proj)
            for step in STEPS:
                history.run(step)
            proj.catch_up(search=True)
            assert proj.vectors is not None
            live = proj.vectors.dump()
        finally:
            proj.close()
        in_process = _replay_dump(tmp_path, log, worker=False)
        with_worker = _replay_dump(tmp_path, log, worker=True)
        head = log.head().seq
    assert with_worker == in_process
    assert with_worker["vectors"] == live
    assert with_worker["checkpoint"] == head
