"""The MemoryLog facade: batches, access recording, settings, idempotent reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from commands import MemoryLog, load_settings
from eventstore import ConcurrencyError, InvalidInputError, NotFoundError, SessionArchivedError, now_micros


def test_batch_writes_in_one_transaction(tmp_path: Path) -> None:
    """A batch lands all its writes together, including a session started inside it."""
    with MemoryLog.open(tmp_path / "s") as mem:
        with mem.batch():
            sid = mem.start_session(user_id="alice")
            ids = [mem.add_message(sid, role="user", content=f"imported {i}",
                                   occurred_at="2020-01-01T00:00:00Z") for i in range(100)]
            assert mem.log.head().seq == 0  # nothing written until the block ends
        assert mem.log.head().seq == 101
        assert mem.show(ids[-1]).occurred_at == "2020-01-01T00:00:00Z"
        assert mem.session(sid).statistics["total_messages"] == 100


def test_failed_batch_writes_nothing(tmp_path: Path) -> None:
    """An error inside a batch leaves the log untouched."""
    with MemoryLog.open(tmp_path / "s") as mem:
        sid = mem.start_session()
        head = mem.log.head().seq
        with pytest.raises(InvalidInputError), mem.batch():
            mem.add_message(sid, role="user", content="fine")
            mem.add_message(sid, role="user", content="")
        assert mem.log.head().seq == head


def test_search_records_accesses_unless_switched_off(tmp_path: Path) -> None:
    """Searches note their accesses, appended as one batched entries.accessed event
    (off the read path: at the background flush or the store's close), unless
    record_access is off. (It used to be one durable append per search.)"""
    with MemoryLog.open(tmp_path / "s") as mem:
        sid = mem.start_session()
        mem.add_message(sid, role="user", content="postgres tuning")
        before = mem.log.head().seq
        mem.search("postgres")
        mem.search("tuning")
        assert mem.store.access.flush() == 1
        assert mem.log.head().seq == before + 1
        assert mem.log.get(before + 1).type == "entries.accessed"
        mem.search("postgres", record_access=False)
        assert mem.log.head().seq == before + 1
    with MemoryLog.open(tmp_path / "s", record_access=False) as mem:
        mem.search("postgres")
        assert mem.log.head().seq == before + 1


def test_accesses_raise_the_decay_factor(tmp_path: Path) -> None:
    """An often-read entry decays less than an identical unread one (seed 000's boost)."""
    with MemoryLog.open(tmp_path / "s") as mem:
        sid = mem.start_session()
        when = now_micros() - 10 * 3_600_000_000  # ten hours ago: decayed, not at the floor
        a = mem.add_message(sid, role="user", content="alpha cache note", occurred_at=when)
        b = mem.add_message(sid, role="user", content="beta cache note", occurred_at=when)
        for _ in range(5):
            mem.search("alpha")
            mem.store.access.flush()  # accesses are batched; one flush per search keeps five
        hits = {h.id: h for h in mem.search("cache note", record_access=False, mode="text")}
        assert hits[a].decay > hits[b].decay


def test_settings_come_from_config_env_and_overrides(tmp_path: Path) -> None:
    """config.toml < MEMLOG_* < explicit overrides; bad values are refused."""
    store = tmp_path / "s"
    store.mkdir()
    (store / "config.toml").write_text("max_content_bytes = 2048\ncontext_budget_tokens = 900\n")
    settings = load_settings(store, environ={"MEMLOG_CONTEXT_BUDGET_TOKENS": "700"})
    assert settings.max_content_bytes == 2048 and settings.context_budget_tokens == 700
    assert load_settings(store, {"context_budget_tokens": 600}, environ={}).context_budget_tokens == 600
    (store / "config.toml").write_text("no_such_setting = 1\n")
    with pytest.raises(InvalidInputError):
        load_settings(store, environ={})
    with pytest.raises(InvalidInputError):
        load_settings(None, environ={"MEMLOG_SYNC": "maybe"})


def test_concurrent_writer_is_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ConcurrencyError on append makes the facade decide again and succeed."""
    with MemoryLog.open(tmp_path / "s") as mem:
        sid = mem.start_session()
        real = mem.log.append
        calls = {"n": 0}

        def flaky(*args: object, **kwargs: object) -> object:
            calls["n"] += 1
            if calls["n"] == 1:
                raise ConcurrencyError("raced", stream="x")
            return real(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(mem.log, "append", flaky)
        mem.add_message(sid, role="user", content="after a race")
        assert calls["n"] == 2


def test_unknown_ids_raise_not_found(tmp_path: Path) -> None:
    """Unknown sessions, entries and memories raise NotFoundError with stable codes."""
    with MemoryLog.open(tmp_path / "s") as mem:
        with pytest.raises(NotFoundError) as info:
            mem.add_message("sess-x", role="user", content="x")
        assert info.value.code == "E_SESSION_NOT_FOUND"
        with pytest.raises(NotFoundError):
            mem.show("dec-x")
        with pytest.raises(NotFoundError):
            mem.forget("alice", "nothing")


def test_session_checks_see_other_writers(tmp_path: Path) -> None:
    """The cached liveness of a session is dropped when anyone archives it
    (without auto-restore: a write into an archived session is refused)."""
    with MemoryLog.open(tmp_path / "s", auto_restore=False) as mem, \
            MemoryLog.open(tmp_path / "s", auto_restore=False) as other:
        sid = mem.start_session()
        mem.add_message(sid, role="user", content="first")
        with mem.batch():
            mem.add_message(sid, role="user", content="second")
        other.archive_session(sid)
        with pytest.raises(SessionArchivedError):
            mem.add_message(sid, role="user", content="third")
        with pytest.raises(SessionArchivedError), mem.batch():
            mem.add_message(sid, role="user", content="third")
        other.restore_session(sid)
        mem.add_message(sid, role="user", content="fourth")
        assert mem.session(sid).statistics["total_messages"] == 3


def test_a_new_importance_reorders_search_now_and_not_in_the_past(tmp_path: Path) -> None:
    """Ranking reads importance from the views' by_seq value, so an update must reach
    it; a search as of before the update still ranks with the old importance."""
    with MemoryLog.open(tmp_path / "s") as mem:
        sid = mem.start_session()
        when = now_micros() - 3_600_000_000
        low = mem.add_message(sid, role="user", content="cache note", occurred_at=when)
        high = mem.add_message(sid, role="user", content="cache note", occurred_at=when)
        mem.set_importance(low, 0.0)
        mem.set_importance(high, 1.0)
        before = mem.log.head().seq
        assert [h.id for h in mem.search("cache note", record_access=False, mode="text")] == [high, low]
        mem.set_importance(low, 1.0)
        mem.set_importance(high, 0.0)
        assert [h.id for h in mem.search("cache note", record_access=False, mode="text")] == [low, high]
        assert [h.id for h in mem.as_of(before).search("cache note", mode="text")] == [high, low]
        mem.replay()
        assert [h.id for h in mem.search("cache note", record_access=False, mode="text")] == [low, high]
