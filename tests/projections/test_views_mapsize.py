"""Growing the views map mid-catch-up loses no record."""

from __future__ import annotations

from pathlib import Path

from eventstore import EntryRecorded, EventLog
from projections import Projections


def test_catch_up_across_map_growth_applies_every_record(tmp_path: Path) -> None:
    """~90 MB of entries overflow the 64 MiB initial views map; every entry is still applied."""
    with EventLog.open(tmp_path / "log") as log:
        for start in range(0, 100, 10):
            log.append("s:big", [EntryRecorded(entry_id=f"b{n}", kind="message", occurred_at=n,
                                               content=f"{n} " + "lorem ipsum " * 75_000)
                                 for n in range(start, start + 10)], actor="t")
        proj = Projections(tmp_path, log, shards=1)
        try:
            with proj.read() as views:
                assert views.checkpoint() == 100
                assert views.counters()["entries"] == 100
                assert all(views.entry(f"b{n}") is not None for n in range(100))
        finally:
            proj.close()
