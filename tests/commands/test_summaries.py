"""Session summaries (seed 001), and erasure that follows derivation: deleting a
source deletes the summary (byte scan) and writes it again from what remains."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commands import MemoryLog
from commands.app.forgetting.scan import scan_tree
from eventstore import EventLog, ReadOnlyError, SessionSummarised, SummaryResummarised
from projections import Projections

from ..projections.history import History, steps
from .conftest import Run

HOUR = 3_600_000_000
T0 = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z


def marker() -> str:
    """A unique token that the tokenizer keeps whole."""
    return "zq" + secrets.token_hex(10)


@pytest.fixture
def mem(tmp_path: Path) -> Iterator[MemoryLog]:
    with MemoryLog.open(tmp_path / "m", embedder=None, summary_threshold_tokens=300) as m:
        yield m


def _say(mem: MemoryLog, sid: str, i: int, extra: str = "") -> str:
    return mem.add_message(sid, role="user", occurred_at=T0 + i * HOUR,
                           content=f"turn {i}: we tuned the cache warmup for the ledger service. {extra}")


def _events(mem: MemoryLog, kind: type) -> list[Any]:
    return [r.event for r in mem.log.read() if isinstance(r.event, kind)]


def test_past_the_threshold_the_oldest_are_summarised_and_the_last_10_kept(mem: MemoryLog) -> None:
    sid = mem.start_session(user_id="alice")
    ids = [_say(mem, sid, i) for i in range(30)]
    first = _events(mem, SessionSummarised)[0]
    assert first.session_id == sid and first.policy == "tokens>300 keep_last=10"
    assert first.tokens_before > 300
    summarised = list(first.summarised_entry_ids)
    # the oldest go; the last 10 of the messages the check saw stay
    assert summarised and summarised == ids[: len(summarised)]
    kept = ids[len(summarised): len(summarised) + 10]
    assert first.tokens_after == -(-sum(len(mem.show(i).content) for i in kept) // 4)
    summary = mem.show(first.summary_entry_id)
    assert summary.type == "summary" and list(summary.derived_from) == summarised
    # summarised messages stay in the log, in search and in the transcript
    assert mem.show(ids[0]).state == "live"
    assert mem.transcript(sid, limit=None).total == 30
    assert ids[0] in {h.id for h in mem.search("turn ledger", session_id=sid, limit=50, record_access=False)}
    # ... and are marked in the views
    with mem.proj.read() as views:
        assert views.summarised_by(ids[0]) is not None and views.summarised_by(ids[-1]) is None
    assert any(h.type == "session.summarised" for h in mem.history(ids[0]))


def test_the_context_shows_the_summary_instead_of_the_summarised_messages(mem: MemoryLog) -> None:
    sid = mem.start_session(user_id="alice")
    ids = [_say(mem, sid, i) for i in range(30)]
    with mem.proj.read() as views:
        marked = [i for i in ids if views.summarised_by(i) is not None]
        newest = views.summarised_by(marked[-1])
    block = mem.context(sid, budget_tokens=20000)
    assert block.truncated
    names = [s.name for s in block.sections]
    assert "summary" in names
    summary_text = next(s.text for s in block.sections if s.name == "summary")
    assert mem.show(newest or "").content in summary_text.replace("\n", " ")
    messages = next(s for s in block.sections if s.name == "messages")
    assert messages.items == len(ids) - len(marked)


def test_rolling_summaries_carry_the_previous_one(mem: MemoryLog) -> None:
    sid = mem.start_session()
    for i in range(60):
        _say(mem, sid, i)
    found = _events(mem, SessionSummarised)
    assert len(found) >= 2
    second = mem.show(found[1].summary_entry_id)
    assert second.derived_from[0] == found[0].summary_entry_id


def test_on_demand_and_below_the_threshold(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "m", embedder=None, auto_summarise=False) as mem:
        sid = mem.start_session()
        ids = [_say(mem, sid, i) for i in range(15)]
        report = mem.summarise(sid)
        assert not report.summarised and report.tokens_before <= 8000
        report = mem.summarise(sid, force=True)
        assert report.summarised and report.summarised_ids == tuple(ids[:5]) and report.kept == 10


def _erasure_store(root: Path, secret: str) -> tuple[MemoryLog, str, list[str], str]:
    mem = MemoryLog.open(root, auto_summarise=False)
    sid = mem.start_session(user_id="alice")
    ids = [_say(mem, sid, 0, f"The vault passphrase hint is {secret} for the ledger keys."),
           *(_say(mem, sid, i) for i in range(1, 14))]
    report = mem.summarise(sid, force=True)
    assert report.summary_id is not None
    assert secret in mem.show(report.summary_id).content
    return mem, sid, ids, report.summary_id


def test_deleting_a_source_erases_the_summary_and_writes_it_again(tmp_path: Path) -> None:
    """The forensic scan finds neither the deleted source's words nor the old
    summary's text anywhere under the data directory; the new summary is made
    of what remains and stands for the same messages in the context."""
    secret = marker()
    root = tmp_path / "m"
    mem, sid, ids, old = _erasure_store(root, secret)
    with mem:
        old_text = mem.show(old).content
        mem.log.backend.seal()  # recent payloads are concealed until sealed (eventstore/lmdb/recent.py)
        assert scan_tree(root, [secret.encode(), old_text.encode()])[0]  # positive control
        report = mem.delete(ids=[ids[0]], reason="erasure request", requested_by="dpo")
        assert set(report.ids) == {ids[0], old} and report.verified
        assert mem.show(old).state == "deleted"
        again = _events(mem, SummaryResummarised)
        assert [(e.replaced_entry_id, e.request_id) for e in again] == [(old, report.request_id)]
        new = mem.show(again[0].summary_entry_id)
        assert secret not in new.content and new.derived_from == tuple(ids[1:4])
        with mem.proj.read() as views:
            assert views.summarised_by(ids[1]) == new.id
        assert new.content in mem.context(sid, budget_tokens=20000).text.replace("\n", " ")
    assert scan_tree(root, [secret.encode(), old_text.encode()])[0] == {}


def test_resummarise_can_be_switched_off(tmp_path: Path) -> None:
    mem, _, ids, old = _erasure_store(tmp_path / "m", marker())
    with mem:
        mem.delete(ids=[ids[0]], reason="erasure request", requested_by="dpo", resummarise=False)
        assert mem.show(old).state == "deleted" and not _events(mem, SummaryResummarised)
    with MemoryLog.open(tmp_path / "m", embedder=None, resummarise_on_delete=False) as again:
        sid = again.start_session()
        a, b = _say(again, sid, 1), _say(again, sid, 2)
        summary = again.record_summary(sid, content="turns one and two were on caches", derived_from=[a, b])
        again.delete(ids=[a], reason="erasure request", requested_by="dpo")
        assert again.show(summary).state == "deleted" and not _events(again, SummaryResummarised)


def test_deleting_a_user_deletes_their_summaries(tmp_path: Path) -> None:
    secret = marker()
    root = tmp_path / "m"
    mem, _, _, old = _erasure_store(root, secret)
    with mem:
        report = mem.delete(user_id="alice", reason="erasure request", requested_by="dpo")
        assert old in report.ids and not _events(mem, SummaryResummarised)
    assert scan_tree(root, [secret.encode()])[0] == {}


def test_a_deleted_summary_itself_is_not_written_again(tmp_path: Path) -> None:
    mem, _, _, old = _erasure_store(tmp_path / "m", marker())
    with mem:
        mem.delete(ids=[old], reason="not wanted", requested_by="alice")
        assert not _events(mem, SummaryResummarised)


def test_cli_summarise(run: Run, store: Path) -> None:
    with MemoryLog.open(store, embedder=None, auto_summarise=False) as mem:
        sid = mem.start_session()
        for i in range(12):
            _say(mem, sid, i)
    code, out, err = run("summarise", sid)
    assert code == 0 and not out["summarised"], err
    code, out, err = run("summarise", sid, "--force")
    assert code == 0 and out["summarised"] and len(out["summarised_ids"]) == 2, err


def _marks(proj: Projections, as_of: int | None, ids: list[str]) -> dict[str, str | None]:
    assert proj.views is not None
    with proj.views.read(as_of) as views:
        return {eid: views.summarised_by(eid) for eid in ids}


@settings(max_examples=15)
@given(history=steps, data=st.data())
def test_summary_marks_as_of_equal_a_replay_until(tmp_path_factory: pytest.TempPathFactory,
                                                  history: list[Any], data: st.DataObject) -> None:
    """The views' summary marks read as of @k equal those of a replay stopped at @k."""
    root = tmp_path_factory.mktemp("marks")
    with EventLog.open(root / "log") as log:
        proj = Projections(root, log, shards=2)
        try:
            runner = History(log, proj)
            for step in history:
                runner.run(step)
            k = data.draw(st.integers(1, log.head().seq))
            ids = [e[0] for e in runner.entries]
            proj.catch_up(search=True)
            past = _marks(proj, k, ids)
            proj.replay(until=k)
            assert _marks(proj, None, ids) == past
        finally:
            proj.close()


def test_read_only_refuses_compaction_and_summaries(tmp_path: Path, run: Run, store: Path) -> None:
    with MemoryLog.open(store, embedder=None, auto_summarise=False, auto_compact=False) as mem:
        sid = mem.start_session()
        for i in range(12):
            _say(mem, sid, i)
        head = mem.log.head().seq
    with MemoryLog.open(store, embedder=None, read_only=True) as mem:
        with pytest.raises(ReadOnlyError):
            mem.summarise(sid, force=True)
        with pytest.raises(ReadOnlyError):
            mem.compact(sid)
        assert mem.compact(sid, dry_run=True)[0].removed_ids  # a dry run only reads
    for argv in (["summarise", sid, "--force"], ["compact", "--session", sid]):
        code, _, err = run("--read-only", *argv)
        assert code == 4 and "E_READ_ONLY" in err
    with MemoryLog.open(store, embedder=None, read_only=True) as mem:
        assert mem.log.head().seq == head


def test_a_summariser_that_raises_never_fails_the_write_that_landed(tmp_path: Path) -> None:
    def broken(texts: object) -> str:
        raise ConnectionError("the model is down")

    with MemoryLog.open(tmp_path / "s", embedder=None, summary_threshold_tokens=10,
                        summariser=broken) as mem:
        sid = mem.start_session()
        ids = [mem.add_message(sid, role="user", content=f"message {i} about the rollout plan")
               for i in range(5)]
        assert mem.transcript(sid).total == len(ids) == 5


def test_redaction_follows_derivation_into_summaries(tmp_path: Path) -> None:
    root = tmp_path / "r"
    token = "zqredactme" + secrets.token_hex(8)
    with MemoryLog.open(root, embedder=None, auto_summarise=False) as mem:
        sid = mem.start_session(user_id="alice")
        first = mem.add_message(sid, role="user", content=f"The vault code is {token} and the door is blue.")
        for i in range(12):
            mem.add_message(sid, role="user", content=f"Message {i} talks about the door and the vault.")
        report = mem.summarise(sid, force=True)
        assert report.summary_id and token in (mem.show(report.summary_id).content or "")
        mem.redact(first, regex="zqredactme[0-9a-f]+", reason="leak", requested_by="dpo")
        assert mem.show(report.summary_id).state == "deleted"
        again = [r.event for r in mem.log.read() if r.type == "summary.resummarised"]
        assert again and again[-1].replaced_entry_id == report.summary_id  # type: ignore[union-attr]
        assert token not in (mem.show(again[-1].summary_entry_id).content or "")  # type: ignore[union-attr]
        assert token not in "".join(mem.export("jsonl"))
    assert not scan_tree(root, [token.encode()])[0]
