"""The LMDB backend passes the backend contract."""

from __future__ import annotations

import pytest

from eventstore import EventLog

from .contract import LogContract, OpenLog


@pytest.fixture
def open_log() -> OpenLog:
    """Open the embedded LMDB log."""
    return lambda path: EventLog.open(path / "log")


class TestLmdbContract(LogContract):
    """Runs every contract test on LMDB."""
