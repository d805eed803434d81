"""A crash (``os._exit``) before each file-system step of a delete, a forget,
a deferred purge and a redaction; then an open of the store. The open finishes
the purge: no byte of the deleted content is left anywhere under the data
directory, the purge's record is verified, and nothing is left over."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from commands import MemoryLog
from commands.app.forgetting.purging import leftovers
from eventstore import EventLog
from eventstore.storage import CRASH_EXIT

from ..conftest import scan_dir

pytestmark = pytest.mark.slow

SECRET = "crash-injection-secret-text-that-must-vanish-4b1d"
MEMORY = "crash-injection-memory-value-that-must-vanish-9e2c"
SPAN = "zeta-span-to-redact-0042"
SCENARIOS = {
    "delete": [["delete", "--id", "{mid}", "--reason", "r", "--requested-by", "dpo", "--yes"]],
    "forget": [["forget", "--user", "alice", "secret_note"]],
    "deferred": [["delete", "--id", "{mid}", "--reason", "r", "--requested-by", "dpo", "--yes", "--defer"],
                 ["purge"]],
    "redact": [["redact", "{rid}", "--regex", "zeta-[a-z0-9-]+", "--reason", "r", "--requested-by", "dpo"]],
}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A store with the texts to delete among others, built once."""
    root = tmp_path_factory.mktemp("template") / "store"
    with MemoryLog.open(root) as mem:
        sid = mem.start_session(user_id="alice")
        for i in range(30):
            mem.add_message(sid, role="user", content=f"ordinary message number {i} about databases")
        mid = mem.add_message(sid, role="user", content=f"please keep {SECRET} private")
        rid = mem.add_message(sid, role="user", content=f"the span {SPAN} goes, the rest stays")
        mem.remember("alice", "secret_note", MEMORY)
        mem.search("databases")  # the index exists and is committed
    return root, {"mid": mid, "rid": rid}


def _memlog(store: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "commands", "--dir", str(store), "--json", *args],
                          capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})


def _steps(scenario: str, template: tuple[Path, dict[str, str]], work: Path) -> list[list[str]]:
    ids = template[1]
    return [[a.format(**ids) for a in argv] for argv in SCENARIOS[scenario]]


def _crash_points(scenario: str, template: tuple[Path, dict[str, str]], work: Path) -> list[tuple[int, int]]:
    """(command, step) for every file-system step of every command of the scenario."""
    store = work / "trace"
    shutil.copytree(template[0], store, symlinks=True)
    points = []
    for i, argv in enumerate(_steps(scenario, template, work)):
        trace = work / f"trace-{i}.txt"
        assert _memlog(store, *argv, env={"MEMLOG_CRASH_TRACE": str(trace)}).returncode == 0
        steps = len(trace.read_text().splitlines()) if trace.exists() else 0
        points += [(i, at) for at in range(1, steps + 1)]
    return points


def _crash_then_open(scenario: str, point: tuple[int, int], template: tuple[Path, dict[str, str]],
                     work: Path) -> dict[str, Any]:
    store = work / f"crash-{point[0]}-{point[1]}"
    shutil.copytree(template[0], store, symlinks=True)
    crashed = False
    for i, argv in enumerate(_steps(scenario, template, work)):
        env = {"MEMLOG_CRASH_AT": str(point[1])} if i == point[0] else {}
        done = _memlog(store, *argv, env=env)
        if done.returncode == CRASH_EXIT:
            crashed = True
            break
        assert done.returncode == 0, done.stderr
    opened = _memlog(store, "stats")
    assert opened.returncode == 0, opened.stderr
    if scenario == "deferred":  # a deferred purge waits for `memlog purge`
        assert _memlog(store, "purge").returncode == 0
    return {"store": store, "crashed": crashed, "stderr": opened.stderr}


def _check(result: dict[str, Any], scenario: str, template: tuple[Path, dict[str, str]]) -> None:
    store: Path = result["store"]
    ids = template[1]
    with MemoryLog.open(store, create=False) as mem:
        assert mem.verify().ok
        current = mem.store.proj.root.name
        records = mem.deletions()
        target = {"delete": ids["mid"], "deferred": ids["mid"], "redact": ids["rid"]}.get(scenario)
        state = mem.show(target).state if target else None  # type: ignore[union-attr]
        memories = [m.key for m in mem.memories("alice")]
        completed = [r.event for r in mem.log.read() if r.type == "purge.completed"]
    needle = {"delete": SECRET, "deferred": SECRET, "forget": MEMORY, "redact": SPAN}[scenario].encode()
    erased = state in ("deleted", "redacted") or (scenario == "forget" and "secret_note" not in memories)
    if erased:
        assert scan_dir(store, [needle]) == {}, result
        assert completed and all(e.verified for e in completed), completed  # type: ignore[union-attr]
        assert all(r.purge_verified for r in records)
    else:  # crashed before the erase committed: nothing was deleted, nothing is pending
        assert result["crashed"]
    assert leftovers(store, current) == []
    assert not list((store / "purges").glob("*")) if (store / "purges").exists() else True


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_crash_before_any_step_is_finished_by_the_next_open(
        scenario: str, template: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """Every crash point of the scenario, each on a fresh copy of the store."""
    points = _crash_points(scenario, template, tmp_path)
    assert len(points) >= 8
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda p: _crash_then_open(scenario, p, template, tmp_path), points))
    assert sum(r["crashed"] for r in results) == len(points)
    for result in results:
        _check(result, scenario, template)
    finished = [r for r in results if "interrupted" in r["stderr"]]
    assert finished or scenario == "deferred"


def test_the_report_names_the_checks_of_a_recovered_purge(
        template: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """A purge finished after a crash records the checks it made (it has no texts to scan for)."""
    result = _crash_then_open("delete", (0, 3), template, tmp_path)
    with EventLog.open(result["store"] / "log") as log:
        record = [r.event for r in log.read() if r.type == "purge.completed"][-1]
    assert record.verified  # type: ignore[union-attr]
    assert any("erased payloads read back erased" in c for c in record.checks)  # type: ignore[union-attr]
    assert json.loads(json.dumps(list(record.checks)))  # type: ignore[union-attr]
