"""Erasure of a user erases the identifier: after a deletion by user, the id is
in no file under the data directory (log, views, search, vectors, sidecars)
and in no output (``audit log``, the ledger, the stored purge record); the log
keeps the id's keyed pseudonym; replay rebuilds the same state; another user's
data stays as it was."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

from commands import MemoryLog
from commands.app.upkeep import checkpoints
from commands.cli import cli
from eventstore import InvalidInputError, PurgeCompleted
from tests.commands.conftest import views_dump
from tests.conftest import scan_dir

PHONE = "whatsapp:15551234567@s.whatsapp.net"
OTHER = "whatsapp:15559876543@s.whatsapp.net"
TELEGRAM = "telegram:4915112345678@t.me"
SECRET_FILE = "pseudonym.key"  # the store's secret, in its data directory


def is_pseudonym(value: str) -> bool:
    """A keyed pseudonym: ``uh-`` and 32 hex digits (no id reads from it)."""
    return re.fullmatch(r"uh-[0-9a-f]{32}", value) is not None


def _needles(uid: str) -> list[bytes]:
    """The id's bytes as a file could hold them: UTF-8, UTF-16, and its number alone."""
    found = [uid.encode("utf-8"), uid.encode("utf-16-le")]
    digits = "".join(c for c in uid if c.isdigit())
    return [*dict.fromkeys(found), *([digits.encode()] if len(digits) >= 10 else [])]


def _scan(data_dir: Path, uid: str) -> dict[bytes, list[str]]:
    """Every file under the data directory holding the id (lock files hold none: see scan_dir)."""
    return scan_dir(data_dir, _needles(uid))


def _fill(mem: MemoryLog, uid: str) -> dict[str, Any]:
    """A user with every kind of item the store keeps of a user, and what was
    done to it before the erasure (a forget, a redaction, a deletion by id,
    each requested by the user)."""
    closed = mem.start_session(uid, agent_ids=["bot"], tags=["support"])
    mem.add_message(closed, role="user", content="my parcel never arrived, order 4411")
    mem.record_decision(closed, decision="send a replacement parcel by courier")
    mem.record_lesson(closed, content="ask for the tracking code before anything else")
    checkpoints.checkpoint(mem.store, closed, chat_id="chat-77", model_id="m1")
    gone = mem.add_message(closed, role="user", content="please also drop my old address")
    secret = mem.add_message(closed, role="user", content="the door code is 7781, leave it there")
    mem.close_session(closed)
    open_ = mem.start_session(uid, agent_ids=["bot"])
    mem.add_message(open_, role="user", content="thanks, the courier came")
    mem.set_preference(uid, key="style", value="short answers")
    mem.remember(uid, "favourite", "blue parcels")
    mem.remember(uid, "favourite", "green parcels")
    mem.remember(uid, "drop_me", "to be forgotten")
    mem.forget(uid, "drop_me")  # the requester defaults to the user
    mem.redact(secret, regex=r"door code is \d+", reason="no codes", requested_by=uid)
    mem.delete(ids=[gone], reason="asked to", requested_by=uid)
    return {"sessions": [closed, open_]}


def _other(mem: MemoryLog) -> dict[str, Any]:
    sid = mem.start_session(OTHER, agent_ids=["bot"])
    mid = mem.add_message(sid, role="user", content="where is my umbrella order")
    mem.remember(OTHER, "colour", "red umbrellas")
    mem.set_preference(OTHER, key="style", value="long answers")
    return {"session": sid, "message": mid}


def _of_other(mem: MemoryLog) -> Any:
    """What the second user's data reads as (to compare before and after)."""
    return ([(m.key, m.content) for m in mem.memories(OTHER)],
            [(e.id, e.content) for e in mem.transcript(_other_sid(mem)).messages],
            sorted(h.id for h in mem.search("umbrella", user_id=OTHER)))


def _other_sid(mem: MemoryLog) -> str:
    return next(s.id for s in mem.sessions(OTHER, archived=None))


def _cli(data_dir: Path, *args: str, logs: bool = False) -> str:
    result = CliRunner().invoke(cli, ["--dir", str(data_dir), *args])
    assert result.exit_code == 0, result.output
    return result.stdout + (result.stderr if logs else "")


def _outputs(data_dir: Path) -> str:
    """What the audit commands print: the raw log and the ledger, in every format, with their logs."""
    commands = [("audit", "log"), ("audit", "deletions"), ("--json", "audit", "log"),
                ("--json", "audit", "deletions"), ("-v", "audit", "deletions", "--format", "md"),
                ("-v", "audit", "deletions", "--format", "html"), ("stats",), ("health",)]
    return "\n".join(_cli(data_dir, *cmd, logs=True) for cmd in commands)


@pytest.mark.parametrize("uid", [PHONE, TELEGRAM])
def test_library_delete_by_user_leaves_no_trace_of_the_id(tmp_path: Path, uid: str) -> None:
    data = tmp_path / "store"
    with MemoryLog.open(data) as mem:
        _fill(mem, uid)
        _other(mem)
        before = _of_other(mem)
        assert _scan(data, uid)  # the store held the id before (its items name their user)
        report = mem.delete(user_id=uid, reason=f"erasure asked by {uid}", requested_by=uid)
        assert report.verified and report.purged
        assert any("erased user's id" in c for c in report.checks)
        assert _of_other(mem) == before
        stored = json.dumps([msgspec.to_builtins(d) for d in mem.deletions()])
        purges = [r.event for r in mem.log.read() if isinstance(r.event, PurgeCompleted)]
        assert uid not in stored and uid not in repr(purges)
        assert not [r for r in mem.log.read() if uid in r.stream or uid in r.actor]
    assert _scan(data, uid) == {}
    assert uid not in _outputs(data)


def test_cli_delete_by_user_leaves_no_trace_of_the_id(tmp_path: Path) -> None:
    data = tmp_path / "store"
    with MemoryLog.open(data) as mem:
        _fill(mem, PHONE)
        _other(mem)
        before = _of_other(mem)
    out = _cli(data, "-v", "delete", "--user", PHONE, "--reason", "gdpr", "--requested-by", PHONE, "--yes",
               logs=True)
    assert "verified" in out and "deletion recorded" in out  # the report, and the logs of the request
    assert PHONE not in out and "15551234567" not in out
    assert _scan(data, PHONE) == {}
    printed = _outputs(data)
    assert PHONE not in printed and "15551234567" not in printed
    deletions = json.loads(_cli(data, "--json", "audit", "deletions"))
    rows = deletions if isinstance(deletions, list) else next(iter(deletions.values()))
    assert any(is_pseudonym(str(r["criteria"].get("user_id", ""))) for r in rows)
    with MemoryLog.open(data) as mem:
        assert _of_other(mem) == before
    assert _scan(data, OTHER)  # the other user's items still name their user


def _views(mem: MemoryLog) -> dict[str, Any]:
    """Every views database, the ``derived`` links included (a deletion drops
    the links of the entries it erases, as a replay never makes them)."""
    return views_dump(mem)


def test_replay_after_the_erasure_rebuilds_the_same_state(tmp_path: Path) -> None:
    data = tmp_path / "store"
    with MemoryLog.open(data) as mem:
        _fill(mem, PHONE)
        _other(mem)
        mem.delete(user_id=PHONE, reason="gdpr", requested_by=PHONE)
        live = _views(mem)
        before = _of_other(mem)
        mem.replay()
        assert _views(mem) == live
        assert _of_other(mem) == before
    _cli(data, "replay")
    assert _scan(data, PHONE) == {}
    with MemoryLog.open(data) as mem:
        assert _of_other(mem) == before


def test_the_log_keeps_a_keyed_pseudonym(tmp_path: Path) -> None:
    """A user's stream is named by the id's pseudonym, the same for the same id
    in one store, another in another store (a secret of its own)."""
    names = []
    for name in ("a", "b"):
        with MemoryLog.open(tmp_path / name) as mem:
            mem.remember(PHONE, "k", "v")
            mem.remember(PHONE, "k2", "v2")
            streams = {r.stream for r in mem.log.read() if r.stream.startswith("user:")}
            assert len(streams) == 1
            names.append(streams.pop())
            assert is_pseudonym(names[-1].removeprefix("user:"))
        assert (tmp_path / name / SECRET_FILE).stat().st_mode & 0o077 == 0
    assert names[0] != names[1]


def test_a_narrower_deletion_keeps_the_users_other_items(tmp_path: Path) -> None:
    """A deletion by user and kind stores the pseudonym too, and leaves the rest."""
    with MemoryLog.open(tmp_path / "s") as mem:
        _fill(mem, PHONE)
        report = mem.delete(user_id=PHONE, kinds=["message"], reason="r", requested_by="dpo")
        assert report.verified and report.counts_by_kind == {"message": 3}
        (record,) = [d for d in mem.deletions() if d.request_id == report.request_id]
        assert record.requested_by == "dpo" and is_pseudonym(str(record.criteria["user_id"]))
        assert [m.content for m in mem.memories(PHONE)] == ["green parcels"]


def test_a_requester_who_is_a_user_is_kept_as_a_pseudonym(tmp_path: Path) -> None:
    """Another user who asks for a deletion is named by pseudonym; a requester
    who is no user (an officer) as given."""
    with MemoryLog.open(tmp_path / "s") as mem:
        _other(mem)
        sid = mem.start_session(PHONE)
        one = mem.add_message(sid, role="user", content="one")
        two = mem.add_message(sid, role="user", content="two")
        mem.delete(ids=[one], reason="r", requested_by=OTHER)
        mem.delete(ids=[two], reason="r", requested_by="dpo")
        by = [d.requested_by for d in mem.deletions()]
        assert is_pseudonym(by[0]) and by[1] == "dpo"


def test_a_store_written_before_pseudonyms_keeps_working(tmp_path: Path) -> None:
    """Events on a plain ``user:<id>`` stream (a store written before
    pseudonyms) still read, and an import's event id recorded there stays a
    no-op when written again."""
    from eventstore import MemorySaved

    with MemoryLog.open(tmp_path / "s") as mem:
        mem.log.append(f"user:{OTHER}", [MemorySaved(user_id=OTHER, key="old", content="legacy value",
                                                     memory_id="mem-legacy1")],
                       actor="memlog", event_ids=["import:old-1"])
        assert [m.content for m in mem.memories(OTHER)] == ["legacy value"]
        assert mem.store.user_stream(OTHER, ["import:old-1"]) == f"user:{OTHER}"
        assert mem.store.user_stream(OTHER).startswith("user:uh-")
        mem.remember(OTHER, "new", "fresh value")
        assert sorted(m.content for m in mem.memories(OTHER)) == ["fresh value", "legacy value"]
        live = views_dump(mem)
        mem.replay()
        assert views_dump(mem) == live


def test_redact_and_retention_take_a_real_boolean_defer(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "s") as mem:
        sid = mem.start_session(PHONE)
        eid = mem.add_message(sid, role="user", content="mail me at a.person@example.com")
        head = mem.log.head().seq
        for bad in ("yes", 1, "true"):
            with pytest.raises(InvalidInputError) as err:
                mem.redact(eid, patterns=["email"], reason="r", requested_by="dpo", defer=bad)  # type: ignore[arg-type]
            assert err.value.code == "E_SCHEMA_INVALID"
            with pytest.raises(InvalidInputError):
                mem.retention(days={"message": 0}, defer=bad)  # type: ignore[arg-type]
        assert mem.log.head().seq == head


def test_a_legacy_user_stream_is_reported_not_hidden(tmp_path: Path) -> None:
    """The headers of a stream a store wrote before pseudonyms name the user,
    and the chain keeps them: a deletion of the user purges the content and
    says, in the record's checks, that the id stays there (unverified)."""
    from eventstore import MemorySaved

    with MemoryLog.open(tmp_path / "s") as mem:
        mem.log.append(f"user:{PHONE}", [MemorySaved(user_id=PHONE, key="old", content="legacy value",
                                                     memory_id="mem-legacy2")], actor="memlog")
        mem.remember(PHONE, "new", "fresh value")
        report = mem.delete(user_id=PHONE, reason="r", requested_by="dpo")
        assert report.purged and not report.verified and report.deleted == 2
        assert any("written before pseudonyms" in c and c.startswith("FAILED") for c in report.checks)
        assert mem.memories(PHONE) == []
        assert PHONE not in repr(report)


def test_a_user_with_preferences_only_leaves_no_trace(tmp_path: Path) -> None:
    """No session and no memory (nothing that made a purge copy the views
    before): the views' stale pages that named the user go too."""
    data = tmp_path / "store"
    with MemoryLog.open(data) as mem:
        _other(mem)
        for i in range(20):
            mem.set_preference(PHONE, key=f"pref_{i}", value=f"value number {i}")
        report = mem.delete(user_id=PHONE, reason="gdpr", requested_by="dpo")
        assert report.verified and report.counts_by_kind == {"preference": 20}
    assert _scan(data, PHONE) == {}


def test_the_secret_is_made_once_and_checked(tmp_path: Path) -> None:
    """Threads that need the secret at once share one; a secret of the wrong
    size is refused; a read-only store without one makes none."""
    from concurrent.futures import ThreadPoolExecutor

    from commands.app.store.pseudonym import Pseudonyms
    from eventstore import CorruptionError, ReadOnlyError

    with pytest.raises(ReadOnlyError):
        Pseudonyms(tmp_path, read_only=True).of(PHONE)
    assert list(tmp_path.iterdir()) == []
    with ThreadPoolExecutor(8) as pool:
        names = set(pool.map(lambda _: Pseudonyms(tmp_path).of(PHONE), range(32)))
    assert len(names) == 1 and is_pseudonym(names.pop())
    assert [p.name for p in tmp_path.iterdir()] == [SECRET_FILE]
    assert Pseudonyms(tmp_path, read_only=True).of(OTHER) == Pseudonyms(tmp_path).of(OTHER)
    (tmp_path / SECRET_FILE).write_bytes(b"short")
    with pytest.raises(CorruptionError):
        Pseudonyms(tmp_path).of(PHONE)


def test_a_resource_keyed_by_the_user_and_an_mcp_server_of_the_user_leave_no_trace(tmp_path: Path) -> None:
    """A memory resource keyed by ``{user_id}`` is stored under the user's
    pseudonym, and an MCP server started with ``--user`` writes as the
    pseudonym: neither leaves the id in the log's stream names or headers."""
    pytest.importorskip("mcp")
    import asyncio

    from tests.mcp_client import serve

    data = tmp_path / "store"
    with MemoryLog.open(data) as mem:
        _other(mem)
        mem.declare_resource({"id": "notes", "key": "{user_id}", "token_limit": 1000})
        handle = mem.resource("notes", user_id=PHONE)
        handle.append("likes window seats on trains", role="user")
        sid = mem.start_session(PHONE)
        assert "window seats" in mem.context(sid).text
        assert PHONE not in handle.key

    async def talk() -> None:
        async with serve(data, "--user", PHONE, errlog=tmp_path / "err.log") as c:
            await c.call("remember", key="seat", content="aisle on planes")

    asyncio.run(talk())
    with MemoryLog.open(data) as mem:
        report = mem.delete(user_id=PHONE, reason="gdpr", requested_by="dpo")
        assert report.verified, report.findings
    assert _scan(data, PHONE) == {}
    assert PHONE not in _outputs(data)


def test_a_requester_named_after_the_user_keeps_only_the_pseudonym(tmp_path: Path) -> None:
    data = tmp_path / "store"
    with MemoryLog.open(data) as mem:
        _other(mem)
        mem.remember(PHONE, "city", "Lisbon")
        report = mem.delete(user_id=PHONE, reason="gdpr", requested_by=f"ticket-for-{PHONE}")
        assert report.verified, report.findings
    assert _scan(data, PHONE) == {}


def test_a_session_id_that_holds_the_user_id_is_refused_or_derived(tmp_path: Path) -> None:
    from commands.transfer.model import session_id_for

    with MemoryLog.open(tmp_path / "store") as mem, pytest.raises(InvalidInputError, match="user's id"):
        mem.start_session(PHONE, session_id=f"chat-{PHONE}")
    assert session_id_for("picobot", PHONE).startswith("sess-")
    assert session_id_for("picobot", "chat-42") == "chat-42"
