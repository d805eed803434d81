"""``memlog export``: JSONL and markdown, nothing deleted in either, the
filters, and the round trip: an export imported into an empty store gives
the same ``show`` (but the log's own facts) and the same ``search``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
from click.testing import CliRunner, Result

from commands import MemoryLog
from commands.cli import cli

DROPPED = "marker-gone-zebra"
KEPT = "falcon"
LOG_FACTS = ("recorded_at", "recorded_seq")  # facts of the log, not of the memory


def run(store: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--dir", str(store), *args])


def build(store: Path) -> dict[str, str]:
    """A store with sessions and entries of every kind, updated, deleted and memorised."""
    ids: dict[str, str] = {}
    with MemoryLog.open(store, embedder=None) as mem:
        s1 = mem.start_session("ana", ["architect", "analyst"], ["payments"], {"project_name": "pay"},
                               channel="tui")
        s2 = mem.start_session("bo", ["dev"], session_id="sess-bo")
        s3 = mem.start_session("ana", ["dev"], session_id="sess-old")
        first = mem.add_message(s1, role="user", content=f"Which {KEPT} database for payments?",
                                agent_id="architect", topic="db", occurred_at="2026-01-11T10:00:00Z")
        ids["message"] = mem.add_message(s1, role="assistant", content="PostgreSQL, for ACID.",
                                         parent_id=first, importance=0.7,
                                         occurred_at="2026-01-11T10:01:00Z")
        ids["decision"] = mem.record_decision(s1, decision=f"Use PostgreSQL ({KEPT})", rationale="ACID",
                                              alternatives=["MongoDB"], impact="high", made_by="architect",
                                              approved_by=["ana"], tags=["db"], derived_from=[first])
        ids["finding"] = mem.record_finding(s1, description="Pool not configured", severity="high",
                                            category="perf", evidence="yml", recommendation="HikariCP",
                                            agent_id="analyst")
        mem.update_finding(ids["finding"], status="resolved")
        ids["task"] = mem.add_task(s1, content=f"Configure the {KEPT} pool")
        mem.complete_task(ids["task"])
        ids["lesson"] = mem.record_lesson(s1, content="Always pool connections; ask ops@example.com",
                                          tags=["perf"])
        ids["handoff"] = mem.record_handoff(s1, content="Next: load test")
        ids["summary"] = mem.record_summary(s1, content="Chose PostgreSQL", derived_from=[ids["decision"]])
        ids["project"] = mem.set_project_context(None, content="Stack: Python 3.12")
        ids["project_s"] = mem.set_project_context(s1, content="Payments service")
        ids["preference"] = mem.set_preference("ana", key="style", value="concise", category="comm",
                                               confidence=0.9)
        ids["bo"] = mem.add_message(s2, role="user", content=f"bo's own {KEPT} note")
        ids["tool"] = mem.add_message(s2, role="tool", content="result 42", tool_call_id="call_1")
        gone = mem.add_message(s1, role="user", content=f"{DROPPED} please forget this")
        mem.delete(ids=[gone], reason="user request", requested_by="ana")
        ids["gone"] = gone
        mem.remember("ana", "coffee", "black")
        mem.remember("ana", "coffee", "flat white")
        ids["memory"] = mem.remember("bo", "city", "Lisbon")
        mem.set_importance(ids["lesson"], 0.9)
        mem.archive_session(s3)
        mem.close_session(s2)
        ids["s1"] = s1
    return ids


def show_all(store: Path, ids: list[str]) -> dict[str, Any]:
    """What the round trip keeps: show, sessions, memories, and search (text,
    and the default mode: hybrid when the shipped embedder is installed)."""
    with MemoryLog.open(store, create=False) as mem:
        out = {}
        for item in ids:
            shown = msgspec.to_builtins(mem.show(item))
            out[item] = {k: v for k, v in shown.items() if k not in (*LOG_FACTS, "saved_at")}
        sessions = {s.id: {k: v for k, v in msgspec.to_builtins(s).items()
                           if k not in ("started_at", "closed_at", "statistics")}
                    for s in mem.sessions(archived=None)}
        memories = {u: [(m.key, m.content, m.id) for m in mem.memories(u)] for u in ("ana", "bo")}
        searches = {q: [(h.id, h.content, h.snippet, h.type, h.session_id, h.tags)
                        for h in mem.search(q, record_access=False, source="both", mode="text", limit=50)]
                    for q in (KEPT, "PostgreSQL", "pool", "concise", "Lisbon", "flat white")}
        default = {q: [(h.id, h.snippet) for h in mem.search(q, record_access=False, limit=20)]
                   for q in ("database choice", "coffee order", KEPT)}
    return {"show": out, "sessions": sessions, "memories": memories, "search": searches, "default": default}


def test_jsonl_round_trip_gives_the_same_show_and_search(tmp_path: Path) -> None:
    ids = build(tmp_path / "a")
    exported = tmp_path / "memory.jsonl"
    assert run(tmp_path / "a", "export", "--output", str(exported)).exit_code == 0
    result = run(tmp_path / "b", "--json", "import", "jsonl", str(exported))
    assert result.exit_code == 0, result.stderr
    keep = [v for k, v in ids.items() if k not in ("gone", "s1")]
    before, after = show_all(tmp_path / "a", keep), show_all(tmp_path / "b", keep)
    assert after == before
    assert before["search"][KEPT] and before["sessions"]["sess-old"]["archived"]
    assert before["sessions"]["sess-bo"]["closed"]
    assert before["show"][ids["lesson"]]["redactions"] == {"email": 1}
    again = run(tmp_path / "b", "--json", "import", "jsonl", str(exported))
    assert json.loads(again.stdout)["written"] == 0


def test_exports_leave_out_deleted_content(tmp_path: Path) -> None:
    ids = build(tmp_path / "a")
    for fmt in ("jsonl", "markdown"):
        text = run(tmp_path / "a", "export", "--format", fmt).stdout
        assert DROPPED not in text and ids["gone"] not in text
        assert "flat white" in text and "black" not in text  # the replaced memory's old content
        assert "Use PostgreSQL" in text
    markdown = run(tmp_path / "a", "export", "--format", "markdown").stdout
    assert markdown.startswith("# memlog export") and f"## Session {ids['s1']}" in markdown


def test_filters_user_session_and_as_of(tmp_path: Path) -> None:
    ids = build(tmp_path / "a")
    bo = run(tmp_path / "a", "export", "--user", "bo").stdout
    assert ids["bo"] in bo and ids["memory"] in bo and ids["decision"] not in bo and "flat white" not in bo
    one = run(tmp_path / "a", "export", "--session", "sess-bo").stdout
    rows = [json.loads(line) for line in one.splitlines()]
    assert {r["type"] for r in rows} == {"memlog.export", "session", "entry"}
    # (besides the handoff its close wrote)
    entries = {r["id"] for r in rows if r["type"] == "entry" and "auto-handoff" not in r.get("tags", ())}
    assert entries == {ids["bo"], ids["tool"]}
    missing = run(tmp_path / "a", "export", "--session", "sess-nope")
    assert missing.exit_code == 3 and "E_SESSION_NOT_FOUND" in missing.stderr
    early = run(tmp_path / "a", "export", "--as-of", "@5").stdout
    assert ids["message"] in early and ids["decision"] not in early


def test_redacted_spans_are_not_exported(tmp_path: Path) -> None:
    store = tmp_path / "a"
    with MemoryLog.open(store, embedder=None) as mem:
        sid = mem.start_session("ana")
        entry = mem.add_message(sid, role="user", content="call me at 555-0100 tomorrow")
        mem.redact(entry, regex=r"555-0100", reason="phone", requested_by="ana")
    text = run(store, "export").stdout
    assert "555-0100" not in text and "tomorrow" in text


def test_the_facade_exports_and_imports(tmp_path: Path) -> None:
    ids = build(tmp_path / "a")
    with MemoryLog.open(tmp_path / "a", embedder=None) as mem:
        lines = list(mem.export("jsonl"))
        markdown = "".join(mem.export("markdown", session_id=mem.show(ids["decision"]).session_id))
    assert markdown.startswith("#")
    (tmp_path / "out.jsonl").write_text("".join(lines))
    with MemoryLog.open(tmp_path / "b", embedder=None) as mem:
        report = mem.import_from("jsonl", tmp_path / "out.jsonl")
        assert report.written > 0 and not report.bad
        assert mem.import_from("jsonl", tmp_path / "out.jsonl").written == 0  # idempotent
        assert mem.show(ids["decision"]).content is not None


def test_an_export_file_is_private_and_never_inside_the_data_dir(tmp_path: Path) -> None:
    build(tmp_path / "a")
    inside = run(tmp_path / "a", "export", "--output", str(tmp_path / "a" / "dump.jsonl"))
    assert inside.exit_code == 2 and "inside the data directory" in inside.output
    assert not (tmp_path / "a" / "dump.jsonl").exists()
    assert run(tmp_path / "a", "export", "--output", str(tmp_path / "dump.jsonl")).exit_code == 0
    assert (tmp_path / "dump.jsonl").stat().st_mode & 0o777 == 0o600
