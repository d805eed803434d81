"""The purge's scan scope: every file but untouched payload segments and shards."""

from __future__ import annotations

from pathlib import Path

from commands.app.scan import purge_scope, scan_needles


def test_scope_leaves_out_only_untouched_segments_and_shards(tmp_path: Path) -> None:
    """Rewritten segments and shards, the main log, the views and stray files are
    scanned; the other segments and shards are not."""
    files = [
        "log/data.mdb", "log/seg-000000/data.mdb", "log/seg-000001/data.mdb",
        "proj-0/views/data.mdb", "proj-0/search/shard-00.ab12/x.term",
        "proj-0/search/shard-01.cd34/x.term", "proj-0/search/shard-01.cd34/meta.json",
        "log/.compact-1/data.mdb", "stray.tmp",
    ]
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"needle-" * 8)
    scope = purge_scope([str(tmp_path / "log/seg-000001/data.mdb"),
                         str(tmp_path / "proj-0/search/shard-01")])
    found, _, _ = scan_needles(tmp_path, [b"needle-" * 8], scope)
    assert sorted(found) == sorted(set(files) - {"log/seg-000000/data.mdb",
                                                 "proj-0/search/shard-00.ab12/x.term"})
