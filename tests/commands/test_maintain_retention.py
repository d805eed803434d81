"""Upkeep without cron: ``memlog maintain`` applies retention by days (the
policy in force), ``--dry-run`` lists it, and ``--every`` runs maintain on a
schedule until SIGTERM."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from commands import MemoryLog
from commands.app.upkeep.loop import Maintainer, Run, parse_interval, run_every
from eventstore import InvalidInputError, LockTimeoutError

from .conftest import Run as CliRun
from .conftest import head_of

OLD = datetime.now(UTC) - timedelta(days=700)
WAIT = 120  # seconds: the most any step of a test waits before it fails (a bound, never asserted)


def _seed(path: Path) -> tuple[str, str, str]:
    """A 700-day-old message, a fresh one and a 700-day-old task."""
    with MemoryLog.open(path, embedder=None) as mem:
        sid = mem.start_session(user_id="alice")
        old = mem.add_message(sid, role="user", content="the heron nests by the old mill", occurred_at=OLD)
        fresh = mem.add_message(sid, role="user", content="the kettle is on")
        task = mem.add_task(sid, content="repaint the mill door", occurred_at=OLD)
    return old, fresh, task


def _stored(path: Path, *ids: str) -> dict[str, bool]:
    with MemoryLog.open(path, create=False, embedder=None) as mem, mem.store.read() as views:
        return {i: (s := views.stored_entry(i)) is not None and s.state != "deleted" for i in ids}


def _step(out: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in out["steps"] if s["name"] == name)


def test_a_run_deletes_what_is_past_its_retention_and_keeps_the_rest(store: Path, run: CliRun) -> None:
    old, fresh, task = _seed(store)
    code, out, _ = run("maintain")
    assert code == 0 and out["failed"] == 0
    due = _step(out, "retention")["due"]
    assert {d["target"]: d["ids"] for d in due} == {"message": [old], "task": [task]}
    assert _stored(store, old, fresh, task) == {old: False, fresh: True, task: False}
    with MemoryLog.open(store, create=False, embedder=None) as mem:
        (request,) = mem.deletions()
        types = [r.type for r in mem.log.read()]
    assert request.reason == "retention" and request.purge_verified
    assert types[-1] == "retention.applied"
    code, out, _ = run("maintain")
    assert code == 0 and out["due"] == 0  # done: nothing due the next time


def test_a_partial_retention_days_table_is_honoured(store: Path, run: CliRun) -> None:
    old, fresh, task = _seed(store)
    (store / "config.toml").write_text("[retention_days]\nmessage = 1000\n")
    code, out, _ = run("maintain")
    assert code == 0
    assert [d["target"] for d in _step(out, "retention")["due"]] == ["task"]  # tasks keep their 180 days
    assert _stored(store, old, fresh, task) == {old: True, fresh: True, task: False}


def test_a_retention_days_value_out_of_range_fails_that_step_alone(store: Path, run: CliRun) -> None:
    old, fresh, task = _seed(store)
    (store / "config.toml").write_text("[retention_days]\nmessage = -3\n")
    head = head_of(store)
    code, text, _ = run("maintain", as_json=False)
    assert code == 1 and "1 failed (retention: E_SCHEMA_INVALID)" in text
    assert text.splitlines()[-1].startswith("maintain: nothing due")  # the other steps ran: none was due
    assert head_of(store) == head and _stored(store, old, fresh, task) == {old: True, fresh: True, task: True}


def test_a_dry_run_lists_ids_and_counts_by_kind_and_writes_nothing(store: Path, run: CliRun) -> None:
    old, _, task = _seed(store)
    head = head_of(store)
    code, out, _ = run("maintain", "--dry-run")
    assert code == 0 and out["dry_run"] is True
    due = _step(out, "retention")["due"]
    assert {d["target"]: (d["items"], d["ids"]) for d in due} == {"message": (1, [old]), "task": (1, [task])}
    assert head_of(store) == head and not (store / "maintain.lock").exists()
    code, text, _ = run("maintain", "--dry-run", as_json=False)
    assert code == 0 and f"retention message: 1 message entry older than 90 days (retention_days.message) " \
        f"({old})" in text


@pytest.mark.parametrize("every", ["0.5s", "0", "abc", "1x", "-1h", "367d", "", "1h30m"])
def test_a_bad_interval_is_refused_and_nothing_is_opened(store: Path, run: CliRun, every: str) -> None:
    code, _, err = run("maintain", "--every", every)
    assert code == 2 and "E_SCHEMA_INVALID" in err
    assert not store.exists()


def test_intervals_take_seconds_minutes_hours_and_days() -> None:
    assert [parse_interval(t) for t in ("1s", "90", "15m", "1.5h", "7d")] == [1, 90, 900, 5400, 604_800]
    with pytest.raises(InvalidInputError):
        parse_interval("0.9s")


def _lines(stream: object) -> queue.Queue[str]:
    """The lines of ``stream``, read by a thread into a queue (the test waits on
    it with a bound); an empty line when it ends (the process exited)."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in stream:  # type: ignore[attr-defined]
            lines.put(line)
        lines.put("")

    threading.Thread(target=read, daemon=True).start()
    return lines


def test_every_runs_on_a_schedule_until_sigterm(store: Path) -> None:
    """A real process: run 1 deletes the old message, run 2 finds nothing due;
    SIGTERM then stops it between runs, exit 0."""
    old, fresh, _ = _seed(store)
    proc = subprocess.Popen([sys.executable, "-m", "commands", "--dir", str(store), "--json", "maintain",
                             "--every", "1s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ})
    try:
        lines = _lines(proc.stdout)
        runs: list[dict[str, Any]] = []
        while len(runs) < 2:  # two runs observed in the output
            line = lines.get(timeout=WAIT)
            assert line, f"exited with {proc.wait(timeout=WAIT)}: {proc.stderr.read() if proc.stderr else ''}"
            runs.append(json.loads(line))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=WAIT) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert [r["run"] for r in runs] == [1, 2] and all(r["error"] is None for r in runs)
    assert [d["target"] for d in _step(runs[0], "retention")["due"]] == ["message", "task"]
    assert runs[1]["due"] == 0
    assert _stored(store, old, fresh) == {old: False, fresh: True}


def test_a_failed_run_is_reported_and_the_loop_goes_on(tmp_path: Path) -> None:
    """The library loop: the first run's opener fails (a lock held elsewhere), the
    second runs; ``on_run`` stops the loop after two runs."""
    path = tmp_path / "store"
    _seed(path)
    stop, seen, opened = threading.Event(), [], []

    def opener() -> AbstractContextManager[Maintainer]:
        opened.append(1)
        if len(opened) == 1:
            raise LockTimeoutError("another memlog maintain is running on this store")
        return MemoryLog.open(path, create=False, embedder=None)

    def on_run(result: Run) -> None:
        seen.append(result)
        if len(seen) == 2:
            stop.set()

    assert run_every(opener, 1, stop, on_run=on_run) == 2
    first, second = seen
    assert first.report is None and first.error == {
        "code": "E_LOCK_TIMEOUT", "message": "another memlog maintain is running on this store"}
    assert second.ok and second.report is not None and second.report.due == 2
    assert first.to_dict() == {"run": 1, "at": first.at, "error": first.error}


def test_the_facade_runs_the_loop_on_its_open_store(tmp_path: Path) -> None:
    path = tmp_path / "store"
    old, fresh, _ = _seed(path)
    stop = threading.Event()
    with MemoryLog.open(path, create=False, embedder=None) as mem:
        assert mem.maintain_every(3600, stop, on_run=lambda _: stop.set()) == 1
        assert mem.deletions()[0].reason == "retention"
    assert _stored(path, old, fresh) == {old: False, fresh: True}
    with pytest.raises(InvalidInputError):
        run_every(lambda: nullcontext(mem), 0.5, threading.Event())
