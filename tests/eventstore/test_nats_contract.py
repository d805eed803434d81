"""The NATS JetStream backend passes the backend contract, unchanged: on a
single node (R1) and on a 3-node loopback cluster (R3, marked ``nats_cluster``).

Each test gets its own stream, so one server (set) serves the whole module.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from eventstore import EventLog

from .contract import LogContract, OpenLog
from .nats_fixtures import Cluster, nats_cluster, nats_node, stream_url  # noqa: F401


def _opener(server: Cluster) -> OpenLog:
    """Open the log of a test's stream: the same ``tmp_path`` reopens the same stream."""
    urls: dict[Path, str] = {}

    def open_log(path: Path) -> EventLog:
        if path not in urls:
            urls[path] = stream_url(server)
        return EventLog.open(urls[path])

    return open_log


class TestNatsContract(LogContract):
    """Every contract test on one JetStream server."""

    @pytest.fixture
    def open_log(self, nats_node: Cluster) -> OpenLog:  # noqa: F811
        return _opener(nats_node)


@pytest.mark.nats_cluster
class TestNatsClusterContract(LogContract):
    """Every contract test on a 3-node R3 cluster."""

    @pytest.fixture
    def open_log(self, nats_cluster: Cluster) -> OpenLog:  # noqa: F811
        return _opener(nats_cluster)
