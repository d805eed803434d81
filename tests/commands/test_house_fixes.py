"""The fixes that came with the house: every text of an entry is reached by
redaction and the scan, the audit contract (absent entries, complete history),
decay keeps what it is not told to change, replay does what it says, private
files whatever the umask, and reads that never create a store."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from commands import MemoryLog

from ..conftest import scan_dir
from .conftest import Run, head_of

SECRET = "zeta-alternative-with-a-long-unique-marker-7f3a"


def _session(run: Run) -> str:
    code, out, err = run("session", "start", "--user", "alice")
    assert code == 0, err
    return str(out["id"])


def test_redact_reaches_a_decision_alternative_and_the_scan_looks_for_it(run: Run, store: Path) -> None:
    """`redact --regex` removes a span that only an alternative holds; no byte of it is left."""
    sid = _session(run)
    code, out, err = run("add", "decision", sid, "--decision", "Use PostgreSQL for the ledger",
                         "--alternative", f"MongoDB, see {SECRET}")
    assert code == 0, err
    did = out["id"]
    assert scan_dir(store, [SECRET.encode()])  # on disk before
    code, out, err = run("redact", did, "--regex", "zeta-[a-z0-9-]+", "--reason", "leak",
                         "--requested-by", "dpo")
    assert code == 0, err
    assert out["verified"] is True and out["counts_by_kind"] == {"custom": 1}
    code, shown, _ = run("show", did)
    assert shown["details"]["alternatives"] == ["MongoDB, see [REDACTED]"]
    assert scan_dir(store, [SECRET.encode()]) == {}


def test_ingest_redaction_covers_every_text_of_an_entry(tmp_path: Path) -> None:
    """An email in an alternative, a tag or a topic never reaches disk."""
    email = "carol.secret.address@example.com"
    with MemoryLog.open(tmp_path / "s") as mem:
        sid = mem.start_session(user_id="alice")
        did = mem.record_decision(sid, decision="Pick a queue", alternatives=[f"ask {email}"])
        mid = mem.add_message(sid, role="user", content="hi", topic=f"mail {email}", tags=[email])
        assert list(mem.show(did).details["alternatives"]) == ["ask [REDACTED]"]  # type: ignore[union-attr]
        shown = mem.show(mid)
        assert shown.details["topic"] == "mail [REDACTED]"  # type: ignore[union-attr]
        assert shown.tags == ("[REDACTED]",)  # type: ignore[union-attr]
    assert scan_dir(tmp_path / "s", [email.encode()]) == {}


def test_audit_at_before_an_entry_was_recorded_answers_absent(run: Run) -> None:
    """`audit at @k entry ID` for an entry recorded after k is state absent, exit 0;
    an id that never existed is still an error."""
    sid = _session(run)
    code, out, _ = run("add", "lesson", sid, "--content", "Load-test the pool")
    assert code == 0
    lid, seq = out["id"], out["seq"]
    code, out, err = run("audit", "at", f"@{seq - 1}", "entry", lid)
    assert code == 0, err
    assert out["state"] == "absent" and out["id"] == lid and out["content"] is None
    code, out, _ = run("audit", "at", f"@{seq}", "entry", lid)
    assert code == 0 and out["state"] == "live"
    code, _, err = run("audit", "at", f"@{seq}", "entry", "les-000000000000")
    assert code == 3 and "E_ENTRY_NOT_FOUND" in err


def test_history_keeps_every_redaction_with_its_reason(run: Run) -> None:
    """Three redactions of one message give three entry.redacted lines, each with its reason."""
    sid = _session(run)
    code, out, _ = run("add", "message", sid, "--role", "user", "--content",
                       "alpha one, beta two and gamma three are the spans here")
    mid = out["id"]
    for word, reason in (("alpha", "r1"), ("beta", "r2"), ("gamma", "r3")):
        code, _, err = run("redact", mid, "--regex", word, "--reason", reason, "--requested-by", "dpo")
        assert code == 0, err
    code, items, err = run("audit", "history", mid)
    assert code == 0, err
    redactions = [i for i in items if i["type"] == "entry.redacted"]
    assert [i["reason"] for i in redactions] == ["r1", "r2", "r3"]
    assert all(i["content"] is None for i in redactions[:2])  # their payloads were erased
    assert [i["type"] for i in items].count("entry.recorded") == 1


def test_decay_rate_changes_that_rate_only(run: Run) -> None:
    """`decay --rate K=R` keeps the other rates and the floor; `--show` prints what is in force."""
    _session(run)
    code, _, err = run("decay", "--rate", "message=0.5", "--floor", "0.3")
    assert code == 0, err
    code, _, err = run("decay", "--rate", "lesson=0.7")
    assert code == 0, err
    code, shown, err = run("decay", "--show")
    assert code == 0, err
    assert shown["rates"]["message"] == 0.5 and shown["rates"]["lesson"] == 0.7
    assert shown["rates"]["decision"] == 0.02  # a default never touched
    assert shown["floor"] == 0.3


def test_decay_show_changes_nothing(run: Run, store: Path) -> None:
    """--show writes no event and refuses to be mixed with changes."""
    _session(run)
    head = head_of(store)
    assert run("decay", "--show")[0] == 0
    code, _, err = run("decay", "--show", "--rate", "message=1")
    assert code == 2 and "--show" in err
    assert head_of(store) == head


def test_replay_projection_search_rebuilds_search_alone(run: Run, store: Path) -> None:
    """`replay --projection search` swaps every shard and leaves the views' directory alone."""
    sid = _session(run)
    run("add", "lesson", sid, "--content", "Load-test the connection pool")
    link = os.readlink(store / "proj")
    views = (store / "proj" / "views" / "data.mdb").stat().st_ino
    shards = sorted(os.readlink(p) for p in (store / "proj" / "search").glob("shard-??"))
    code, out, err = run("replay", "--projection", "search")
    assert code == 0, err
    assert out["projections"] == ["search"]
    assert os.readlink(store / "proj") == link
    assert (store / "proj" / "views" / "data.mdb").stat().st_ino == views
    after = sorted(os.readlink(p) for p in (store / "proj" / "search").glob("shard-??"))
    assert set(after).isdisjoint(shards)
    code, hits, _ = run("search", "pool")
    assert [h["type"] for h in hits] == ["lesson"]


def test_replay_views_alone_is_refused_and_until_is_gone(run: Run, store: Path) -> None:
    """The views cannot be rebuilt alone; --until no longer exists. Neither writes anything."""
    _session(run)
    link = os.readlink(store / "proj")
    code, _, err = run("replay", "--projection", "views")
    assert code == 2 and "views are rebuilt together with search" in err
    code, _, err = run("replay", "--until", "@1")
    assert code == 2 and "--until" in err
    assert os.readlink(store / "proj") == link


def test_every_file_is_private_whatever_the_umask(tmp_path: Path) -> None:
    """Under umask 000, every file under the data directory is 0600 and every directory 0700."""
    script = textwrap.dedent(f"""
        import os
        os.umask(0)
        from commands import MemoryLog
        with MemoryLog.open({str(tmp_path / "s")!r}) as mem:
            sid = mem.start_session(user_id="u")
            mem.add_message(sid, role="user", content="hello private world")
            mem.search("hello")
            mid = mem.add_message(sid, role="user", content="a message long enough to be deleted now")
            mem.delete(ids=[mid], reason="test", requested_by="dpo")
            mem.replay()
            mem.replay(["search"])
            mem.search("hello")
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    loose = [f"{oct(p.lstat().st_mode & 0o777)} {p}" for p in (tmp_path / "s").rglob("*")
             if not p.is_symlink() and (p.lstat().st_mode & 0o777) != (0o700 if p.is_dir() else 0o600)]
    assert loose == []


@pytest.mark.parametrize("args", [
    ("search", "x"), ("show", "msg-1"), ("stats",), ("memories", "--user", "u"),
    ("context", "s1"), ("session", "list"), ("session", "show", "s1"), ("replay",),
    ("audit", "verify"), ("audit", "history", "x"), ("audit", "log"), ("audit", "deletions"),
    ("audit", "at", "@0", "entry", "x"), ("decay", "--show"),
])
def test_a_read_on_a_directory_without_a_store_says_so_and_creates_nothing(
        tmp_path: Path, args: tuple[str, ...]) -> None:
    """A mistyped --dir is E_NO_STORE (exit 3); the directory is not created, an empty one stays empty."""
    from click.testing import CliRunner

    from commands.cli import cli

    for target, existed in ((tmp_path / "typo", False), (tmp_path / "empty", True)):
        if existed:
            target.mkdir()
        result = CliRunner().invoke(cli, ["--dir", str(target), *args])
        assert result.exit_code == 3, result.stderr
        assert "E_NO_STORE" in result.stderr and len(result.stderr.strip().splitlines()) == 1
        assert target.exists() == existed
        assert not existed or list(target.iterdir()) == []


def test_the_library_opens_without_creating_when_asked(tmp_path: Path) -> None:
    """MemoryLog.open(path, create=False) refuses a directory without a store."""
    from eventstore import StoreNotFoundError

    with pytest.raises(StoreNotFoundError):
        MemoryLog.open(tmp_path / "nothing", create=False)
    assert not (tmp_path / "nothing").exists()


def test_import_memlog_gives_the_public_api() -> None:
    """`from memlog import MemoryLog, EventLog` works, with the events, errors and Settings."""
    import memlog
    from commands import MemoryLog as FromCommands
    from memlog import EntryRecorded, EventLog, MemlogError, MemoryLog, Settings

    assert MemoryLog is FromCommands
    assert EventLog.__module__ == "eventstore.log"
    assert {EntryRecorded.__name__, MemlogError.__name__, Settings.__name__} <= set(memlog.__all__)
    assert all(hasattr(memlog, name) for name in memlog.__all__)
