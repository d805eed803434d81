"""Editing an entry's text (``entry.edited``): the CLI, the library, the async
face and MCP write it; search, context and the views show the new text; as-of
reads and history keep the old; deletion and redaction reach every version."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from commands import MemoryLog
from commands.aio import AsyncMemoryLog
from commands.app.forgetting.selection import select
from eventstore import E_ENTRY_NOT_FOUND, E_SCHEMA_INVALID, E_SIZE_LIMIT, DeletionCriteria, EntryNotFoundError
from tests.conftest import scan_dir

from .conftest import Run, head_of, marker, views_dump


def _lesson(store: Path, content: str, user: str = "alice") -> tuple[str, str, int]:
    """A session of ``user`` with one lesson: (session id, lesson id, head seq)."""
    with MemoryLog.open(store) as mem:
        sid = mem.start_session(user_id=user)
        eid = mem.record_lesson(sid, content=content)
        return sid, eid, mem.last_seq


def test_cli_edit_writes_entry_edited_and_show_has_the_new_text(store: Path, run: Run) -> None:
    old, new = marker(), marker()
    _, eid, _ = _lesson(store, f"the cache uses {old}")
    code, out, err = run("edit", eid, "--content", f"the cache uses {new}")
    assert code == 0, err
    assert out == {"id": eid, "seq": head_of(store)}
    code, shown, _ = run("show", eid)
    assert code == 0 and shown["content"] == f"the cache uses {new}"
    code, hist, _ = run("audit", "history", eid)
    assert code == 0 and old in str(hist) and new in str(hist)
    with MemoryLog.open(store) as mem:
        items = mem.history(eid)
    assert [i.type for i in items][:2] == ["entry.recorded", "entry.edited"]
    assert items[0].content == f"the cache uses {old}" and items[1].content == f"the cache uses {new}"


def test_cli_edit_bad_input_writes_nothing(store: Path, run: Run) -> None:
    _, eid, head = _lesson(store, "a lesson about queues")
    cases = [(["edit", eid, "--content", "   "], E_SCHEMA_INVALID),
             (["edit", "les-nosuchentry", "--content", "x"], E_ENTRY_NOT_FOUND),
             (["edit", "bad id!", "--content", "x"], E_SCHEMA_INVALID),
             (["edit", eid, "--content", "x" * ((1 << 20) + 1)], E_SIZE_LIMIT)]
    for args, code_name in cases:
        code, _, err = run(*args)
        assert code != 0 and f"[{code_name}]" in err, (args[:2], err)
    assert head_of(store) == head


def test_library_search_context_as_of_and_history(store: Path) -> None:
    old, new = marker(), marker()
    with MemoryLog.open(store) as mem:
        sid = mem.start_session(user_id="alice")
        eid = mem.record_lesson(sid, content=f"deploys need {old}")
        before = mem.last_seq
        seq = mem.edit(eid, content=f"deploys need {new}")
        assert seq == mem.last_seq > before
        assert mem.show(eid).content == f"deploys need {new}"
        assert [r.id for r in mem.search(new, user_id="alice")] == [eid]
        assert mem.search(old, user_id="alice") == []
        block = mem.context(sid)
        assert new in block.text and old not in block.text
        past = mem.as_of(before)
        assert past.show(eid).content == f"deploys need {old}"
        assert [r.id for r in past.search(old, user_id="alice")] == [eid]
        assert past.search(new, user_id="alice") == []
        assert old in past.context(sid).text
        assert mem.as_of(seq).show(eid).content == f"deploys need {new}"
        history = mem.history(eid)
        assert [(i.type, i.content) for i in history if i.type.startswith("entry.")] == [
            ("entry.recorded", f"deploys need {old}"), ("entry.edited", f"deploys need {new}")]


def test_edit_applies_ingest_redaction_and_keeps_other_fields(store: Path) -> None:
    with MemoryLog.open(store) as mem:
        sid = mem.start_session(user_id="alice")
        eid = mem.record_decision(sid, decision="use postgres", rationale="json support",
                                  tags=["db"])
        mem.edit(eid, content="use postgres, ask ops@example.com")
        shown = mem.show(eid)
    assert shown.content == "use postgres, ask [REDACTED]"
    assert shown.tags == ("db",) and shown.details["rationale"] == "json support"


def test_only_shown_entries_are_edited(store: Path) -> None:
    with MemoryLog.open(store) as mem:
        sid = mem.start_session(user_id="alice")
        gone = mem.record_lesson(sid, content="a lesson to delete")
        mem.delete(ids=[gone], reason="test", requested_by="alice")
        first = mem.set_preference("alice", key="editor", value="vim")
        mem.set_preference("alice", key="editor", value="emacs")
        mid = mem.remember("alice", "db", "postgres")
        head = mem.last_seq
        for item in (gone, first, mid):
            with pytest.raises(EntryNotFoundError):
                mem.edit(item, content="new text")
        assert mem.store.log.head().seq == head


def test_async_edit(tmp_path: Path) -> None:
    async def main() -> str:
        async with await AsyncMemoryLog.open(tmp_path / "store") as mem:
            sid = await mem.start_session(user_id="alice")
            eid = await mem.record_lesson(sid, content="async lesson one")
            await mem.edit(eid, content="async lesson two")
            return (await mem.show(eid)).content  # type: ignore[no-any-return]

    assert asyncio.run(main()) == "async lesson two"


def test_delete_of_an_edited_entry_leaves_neither_version(store: Path) -> None:
    old, mid, new = marker(), marker(), marker()
    with MemoryLog.open(store) as mem:
        sid = mem.start_session(user_id="alice")
        eid = mem.record_lesson(sid, content=f"first text {old}")
        keep = mem.record_lesson(sid, content="a lesson that stays")
        mem.edit(eid, content=f"second text {mid}")
        mem.edit(eid, content=f"third text {new}")
        mem.proj.catch_up(search=True)
    assert set(scan_dir(store, [old.encode(), mid.encode(), new.encode()])) == {
        old.encode(), mid.encode(), new.encode()}  # the positive control
    with MemoryLog.open(store) as mem:
        with mem.store.read() as views:  # the purge's own scan looks for every text
            needles = select(views, DeletionCriteria(ids=(eid,))).needles
        assert {f"first text {old}".encode(), f"third text {new}".encode()} <= needles
        report = mem.delete(ids=[eid], reason="test", requested_by="alice")
        assert report.verified
        assert mem.show(keep).content == "a lesson that stays"
        assert mem.search(old) == [] and mem.search(new) == []
    assert scan_dir(store, [old.encode(), mid.encode(), new.encode()]) == {}


def test_redaction_reaches_every_version(store: Path) -> None:
    with MemoryLog.open(store) as mem:
        sid = mem.start_session(user_id="alice")
        # Recorded without ingest redaction, as an import or a pattern added later would leave it.
        mem.store.entries.redactor = None
        eid = mem.record_lesson(sid, content="mail carol.old.address@example.org for access")
        other = mem.record_lesson(sid, content="mail dave.other.address@example.org for keys")
        mem.edit(eid, content="mail carol.new.address@example.org for access")
        mem.edit(other, content="ask dave in person for keys")  # the secret only in an earlier text
        before = mem.last_seq
        for item in (eid, other):
            mem.redact(item, patterns=["email"], reason="pii", requested_by="alice")
        assert mem.show(eid).content == "mail [REDACTED] for access"
        assert mem.show(other).content == "ask dave in person for keys"
        assert mem.as_of(before).show(eid).content == "mail [REDACTED] for access"
        assert [(i.type, i.what) for i in mem.history(other) if i.type == "entry.edited"] == [
            ("entry.edited", "edited; content erased")]
        mem.proj.catch_up(search=True)
    needles = [b"carol.old.address", b"carol.new.address", b"dave.other.address"]
    assert scan_dir(store, needles) == {}


def test_redaction_positive_control(store: Path) -> None:
    """Without the redaction, the scan above finds every earlier text."""
    with MemoryLog.open(store) as mem:
        sid = mem.start_session(user_id="alice")
        mem.store.entries.redactor = None
        eid = mem.record_lesson(sid, content="mail carol.old.address@example.org for access")
        mem.edit(eid, content="mail carol.new.address@example.org for access")
    assert set(scan_dir(store, [b"carol.old.address", b"carol.new.address"])) == {
        b"carol.old.address", b"carol.new.address"}


def test_edits_replay_to_the_same_views_and_search(store: Path) -> None:
    with MemoryLog.open(store) as mem:
        sid = mem.start_session(user_id="alice")
        eids = [mem.record_lesson(sid, content=f"lesson {w} about caching") for w in ("one", "two")]
        mem.edit(eids[0], content="lesson one about queues")
        mem.edit(eids[0], content="lesson one about retries")
        mem.edit(eids[1], content="lesson two about queues")
        live = views_dump(mem)
        hits = {q: [r.id for r in mem.search(q, user_id="alice")] for q in ("queues", "retries", "caching")}
        assert hits == {"queues": [eids[1]], "retries": [eids[0]], "caching": []}
        mem.proj.replay()
        assert views_dump(mem) == live
        assert {q: [r.id for r in mem.search(q, user_id="alice")] for q in hits} == hits


def test_mcp_edit_is_scoped(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from tests.mcp_client import serve

    store = tmp_path / "store"
    _, mine, _ = _lesson(store, "alice likes short answers")
    _, bobs, _ = _lesson(store, "bob likes long answers", user="bob")
    with MemoryLog.open(store) as mem:
        shared = mem.set_project_context(None, content="the project uses python")

    async def scenario() -> tuple[dict[str, object], str, str, str]:
        async with serve(store, "--user", "alice", errlog=tmp_path / "err.log") as c:
            done = await c.call("edit", entry_id=mine, content="alice likes tables")
            return (done, await c.fail("edit", entry_id=bobs, content="x"),
                    await c.fail("edit", entry_id="les-nosuchentry0", content="x"),
                    await c.fail("edit", entry_id=shared, content="x"))

    done, bob, unknown, project = asyncio.run(scenario())
    assert done == {"id": mine, "seq": head_of(store)}
    assert bob.replace(bobs, "les-nosuchentry0") == unknown and bob.startswith("E_ENTRY_NOT_FOUND")
    assert project.startswith("E_ENTRY_NOT_FOUND")
    with MemoryLog.open(store) as mem:
        assert mem.show(mine).content == "alice likes tables"
        assert mem.show(bobs).content == "bob likes long answers"
        assert mem.show(shared).content == "the project uses python"


def test_a_redacted_entry_can_be_edited_and_then_deleted(store: Path) -> None:
    later = marker()
    with MemoryLog.open(store) as mem:
        sid = mem.start_session(user_id="alice")
        mem.store.entries.redactor = None
        eid = mem.record_lesson(sid, content="mail erin.secret.address@example.org about the pool")
        mem.redact(eid, patterns=["email"], reason="pii", requested_by="alice")
        redacted = mem.last_seq
        mem.edit(eid, content=f"the pool lesson, rewritten {later}")
        assert mem.show(eid).state == "redacted" and mem.show(eid).content.endswith(later)
        assert mem.as_of(redacted).show(eid).content == "mail [REDACTED] about the pool"
        assert [r.id for r in mem.search(later, user_id="alice")] == [eid]
        assert mem.delete(ids=[eid], reason="test", requested_by="alice").verified
    assert scan_dir(store, [later.encode(), b"erin.secret.address", b"about the pool"]) == {}


def test_an_edited_lesson_is_deduplicated_by_its_new_text(store: Path) -> None:
    with MemoryLog.open(store) as mem:
        sid = mem.start_session(user_id="alice")
        eid = mem.record_lesson(sid, content="short words")
        mem.edit(eid, content="always load test the connection pool before launch day")
        again = mem.record_lesson(sid, content="always load test the connection pool before launch day")
    assert again == eid  # reinforced, not recorded twice


def test_an_edit_moves_the_hashtags_and_a_preference_is_set_again_instead(tmp_path: Path) -> None:
    from eventstore import InvalidInputError

    with MemoryLog.open(tmp_path / "store") as mem:
        sid = mem.start_session(user_id="alice")
        eid = mem.add_message(sid, role="user", content="Lunch with #JohnSmith", tags=["food"])
        mem.edit(eid, content="Lunch with a client about #budget")
        assert mem.show(eid).tags == ("food", "budget")
        assert [h.id for h in mem.search("", tags=["budget"])] == [eid]
        assert mem.search("", tags=["johnsmith"]) == []
        live = views_dump(mem)
        mem.replay()
        assert views_dump(mem) == live
        pref = mem.set_preference("alice", key="style", value="verbose prose")
        with pytest.raises(InvalidInputError, match="set its key again"):
            mem.edit(pref, content="style: concise")
