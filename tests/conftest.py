"""Shared fixtures: every test gets its own directory and closes what it opens."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from eventstore import EventLog
from eventstore.storage import is_lmdb_lock_file

settings.register_profile(
    "memlog", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=40
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "memlog"))


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    """A fresh directory for one event log."""
    return tmp_path / "log"


@pytest.fixture
def log(log_dir: Path) -> Iterator[EventLog]:
    """An open event log, closed after the test."""
    with EventLog.open(log_dir) as opened:
        yield opened


def scan_dir(root: Path, needles: list[bytes]) -> dict[bytes, list[str]]:
    """Which needles occur as raw bytes in which files under ``root``.

    LMDB lock files are skipped: they hold reader slots and mutexes, never
    content, and closing any descriptor of one drops this process's LMDB lock
    on it (docs/reliability.md, "Nothing opens an LMDB lock file")."""
    found: dict[bytes, list[str]] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not is_lmdb_lock_file(p)):
        data = path.read_bytes()
        for needle in needles:
            if needle in data:
                found.setdefault(needle, []).append(str(path.relative_to(root)))
    return found
