"""``memlog import``: the four seed formats from trees built like the seeds'
own examples; idempotence, bad records (nothing written, ``file:line``),
``--skip-bad``, ``--dry-run``, ingest redaction, picobot's ``.migrated``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from commands import MemoryLog
from commands.cli import cli
from commands.transfer.model import derived_id

from .transfer_trees import SECRET_EMAIL, SID, aiteam_tree, bmad_tree, gimli_tree, picobot_tree


def run(store: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--dir", str(store), "--json", *args])


def imported(store: Path, fmt: str, path: Path, *extra: str) -> dict[str, Any]:
    result = run(store, "import", fmt, str(path), *extra)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def head(store: Path) -> int:
    with MemoryLog.open(store, create=False, embedder=None) as mem:
        return mem.log.head().seq


def bmad_id(kind: str, folder: str, source: str) -> str:
    return derived_id("bmad", kind, f"{SID}/{folder}/{source}")


def test_bmad_maps_seed_000_fields(tmp_path: Path) -> None:
    store = tmp_path / "store"
    report = imported(store, "bmad", bmad_tree(tmp_path / "project"))
    assert report["by_kind"] == {"decision": 1, "finding": 1, "message": 2, "preference": 2, "session": 1}
    with MemoryLog.open(store, create=False, embedder=None) as mem:
        session = mem.session(SID)
        assert session.user_id == "user-789"
        assert session.agent_ids == ("bmad-master", "architect", "analyst")
        assert set(session.tags) == {"architecture", "payments", "scalability"}
        assert session.metadata["project_name"] == "payment-system"
        decision = mem.show(bmad_id("decision", "decisions", "dec-001"))
        assert decision.type == "decision" and decision.occurred_at == "2026-01-11T10:10:00Z"
        assert decision.details["impact"] == "high" and list(decision.details["approved_by"]) == ["user-789"]
        assert decision.details["alternatives"][0].startswith("MongoDB")
        assert decision.derived_from == (bmad_id("message", "conversation", "msg-001"),
                                         bmad_id("finding", "findings", "finding-003"))
        reply = mem.show(bmad_id("message", "conversation", "msg-001"))
        assert reply.details["parent_id"] == bmad_id("message", "conversation", "msg-000")
        assert reply.details["topic"] == "database_selection" and reply.role == "assistant"
        finding = mem.show(bmad_id("finding", "findings", "finding-003"))
        assert finding.agent_id == "analyst" and finding.details["severity"] == "high"
        pref = mem.show(bmad_id("preference", "preferences", "pref-001"))
        assert pref.user_id == "user-789" and pref.details["confidence"] == 0.9
        hits = mem.search("PostgreSQL", user_id="user-789", record_access=False)
        assert {h.type for h in hits} >= {"decision", "message"}
        assert {h.actor for h in mem.history(decision.id)} == {"memlog/import:bmad"}


def test_picobot_snapshot_is_imported_and_renamed(tmp_path: Path) -> None:
    store, data = tmp_path / "store", picobot_tree(tmp_path)
    report = imported(store, "picobot", data)
    assert report["by_kind"] == {"memory": 1, "message": 4, "session": 1, "summary": 1}
    assert not (data / "sessions.json").exists() and (data / "sessions.json.migrated").is_file()
    with MemoryLog.open(store, create=False, embedder=None) as mem:
        session = mem.session("tui-local-1")
        assert session.user_id == "tui:local" and session.channel == "tui"
        assert [m.content for m in mem.memories("tui:local")] == ["Monday"]
        tool = mem.show(derived_id("picobot", "message", "tui-local-1/messages/3"))
        assert tool.role == "tool" and tool.occurred_at == "2026-02-01T09:01:05Z"
        assert tool.details["tool_call_id"] == "call_42"
    again = run(store, "import", "picobot", str(data))
    assert again.exit_code != 0 and "already migrated" in again.stderr
    with MemoryLog.open(store, create=False, embedder=None) as mem:
        mem.forget("tui:local", "report_day")
        mem.delete(ids=[derived_id("picobot", "message", "tui-local-1/messages/2")], reason="test",
                   requested_by="tui:local")
    again = run(store, "--json", "import", "picobot", str(data / "sessions.json.migrated"))
    assert json.loads(again.stdout)["written"] == 0  # what was forgotten or deleted stays so


def test_aiteam_vault_per_agent_and_project(tmp_path: Path) -> None:
    store = tmp_path / "store"
    report = imported(store, "aiteam", aiteam_tree(tmp_path))
    assert report["by_kind"] == {"decision": 2, "handoff": 1, "lesson": 1, "project": 1, "session": 2,
                                 "task": 2}
    with MemoryLog.open(store, create=False, embedder=None) as mem:
        assert mem.session("aiteam-dev").agent_ids == ("dev",)
        sse = mem.show(derived_id("aiteam", "decision", "bmad-master/decisions/1773679871839"))
        assert sse.occurred_at == "2026-03-16T16:51:00Z" and sse.tags == ("sse", "architecture")
        assert sse.agent_id == "bmad-master"
        done = mem.show(derived_id("aiteam", "task", "dev/tasks/1773679875000"))
        assert done.details == {"done": True} and done.content == "rebuild the BM25 index"
        project = mem.show(derived_id("aiteam", "project", "_project.md"))
        assert project.session_id is None and "Next.js" in (project.content or "")
        handoff = mem.show(derived_id("aiteam", "handoff", "bmad-master/handoffs/1773679872000"))
        assert handoff.tags == ("auto-handoff", "session-close")


def test_gimli_transcripts_and_learnings(tmp_path: Path) -> None:
    store = tmp_path / "store"
    report = imported(store, "gimli", gimli_tree(tmp_path))
    assert report["by_kind"] == {"lesson": 4, "message": 2, "session": 2}
    with MemoryLog.open(store, create=False, embedder=None) as mem:
        sid = "5f0c2a9e-1b7d-4c1e-9a51-0d2f3e4b5c6d"
        assert mem.session(sid).metadata == {"session_key": "agent:main:main"}
        first = mem.show(derived_id("gimli", "message", f"main/{sid}/m1"))
        assert first.content == "Which API version do we call?"
        assert first.occurred_at == "2025-01-15T10:00:01Z"
        lesson = mem.show(derived_id("gimli", "lesson", "main/LEARNINGS/tool-usage/1"))
        assert lesson.tags == ("tool-usage",) and lesson.occurred_at == "2024-01-12T00:00:00Z"


@pytest.mark.parametrize("fmt", ["bmad", "picobot", "aiteam", "gimli"])
def test_a_second_import_adds_nothing(tmp_path: Path, fmt: str) -> None:
    build = {"bmad": bmad_tree, "picobot": picobot_tree, "aiteam": aiteam_tree, "gimli": gimli_tree}[fmt]
    store, source = tmp_path / "store", build(tmp_path / "src")
    first = imported(store, fmt, source)
    before = head(store)
    if fmt == "picobot":
        source = source / "sessions.json.migrated"
    second = imported(store, fmt, source)
    assert second["written"] == 0 and second["already_present"] == first["written"]
    assert head(store) == before


def broken_bmad(tmp_path: Path, unreadable: bool = True) -> Path:
    """A bmad tree whose findings.jsonl line 2 is not JSON (unless not
    ``unreadable``) and whose conversation line 3 has a role memlog refuses."""
    root = bmad_tree(tmp_path / "project")
    folder = root / ".bmad" / "memory" / "sessions" / SID
    if unreadable:
        with (folder / "findings.jsonl").open("a") as f:
            f.write('{"id": "finding-004", "description": "secret-finding-text\n')
    with (folder / "conversation.jsonl").open("a") as f:
        f.write(json.dumps({"id": "msg-002", "role": "wizard", "content": "secret-wizard-text",
                            "timestamp": "2026-01-11T10:06:00Z"}) + "\n")
    return root


def test_a_bad_record_writes_nothing_and_names_file_and_line(tmp_path: Path) -> None:
    store = tmp_path / "store"
    imported(store, "aiteam", aiteam_tree(tmp_path / "earlier"))
    before = head(store)
    result = run(store, "import", "bmad", str(broken_bmad(tmp_path / "1")))
    assert result.exit_code == 2 and "[E_IMPORT_BAD_RECORD]" in result.stderr
    assert f"sessions/{SID}/findings.jsonl:2: invalid JSON" in result.stderr  # refused as read
    decided = run(store, "import", "bmad", str(broken_bmad(tmp_path / "2", unreadable=False)))
    assert decided.exit_code == 2 and "[E_IMPORT_BAD_RECORD]" in decided.stderr
    assert f"sessions/{SID}/conversation.jsonl:3: role must be one of" in decided.stderr  # refused as decided
    for err in (result.stderr, decided.stderr):
        assert "secret" not in err and "wizard" not in err
    assert head(store) == before
    with MemoryLog.open(store, create=False, embedder=None) as mem:
        assert [s.id for s in mem.sessions(archived=None)] == ["aiteam-bmad-master", "aiteam-dev"]


def test_skip_bad_writes_the_good_and_reports_the_bad(tmp_path: Path) -> None:
    store = tmp_path / "store"
    report = imported(store, "bmad", broken_bmad(tmp_path), "--skip-bad")
    places = {(b["file"], b["line"]) for b in report["bad"]}
    assert places == {(f"sessions/{SID}/conversation.jsonl", 3), (f"sessions/{SID}/findings.jsonl", 2)}
    assert "secret" not in json.dumps(report["bad"])
    assert report["written"] == 7
    text = CliRunner().invoke(cli, ["--dir", str(store), "import", "bmad", str(tmp_path / "project"),
                                    "--skip-bad"])
    assert "findings.jsonl:2" in text.stdout and "7 already present" in text.stdout


def test_a_broken_snapshot_names_its_line(tmp_path: Path) -> None:
    data = picobot_tree(tmp_path)
    text = (data / "sessions.json").read_text().splitlines()
    text[5] = text[5] + " oops"
    (data / "sessions.json").write_text("\n".join(text))
    result = run(tmp_path / "store", "import", "picobot", str(data))
    assert result.exit_code == 2 and "sessions.json:6: invalid JSON" in result.stderr
    assert (data / "sessions.json").is_file() and not (tmp_path / "store" / "log").exists()


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "store"
    report = imported(store, "bmad", bmad_tree(tmp_path / "project"), "--dry-run")
    assert report["dry_run"] and report["written"] == 7
    assert not store.exists()
    data = picobot_tree(tmp_path / "pico")
    imported(store, "gimli", gimli_tree(tmp_path / "g"))
    before = head(store)
    report = imported(store, "picobot", data, "--dry-run")
    assert report["written"] == 7 and head(store) == before
    assert (data / "sessions.json").is_file()
    bad = run(tmp_path / "other", "import", "bmad", str(broken_bmad(tmp_path / "b")), "--dry-run")
    assert bad.exit_code == 2 and not (tmp_path / "other").exists()


def test_ingest_redaction_applies_to_imports(tmp_path: Path) -> None:
    store = tmp_path / "store"
    imported(store, "bmad", bmad_tree(tmp_path / "project"))
    with MemoryLog.open(store, create=False, embedder=None) as mem:
        message = mem.show(bmad_id("message", "conversation", "msg-000"))
        assert SECRET_EMAIL not in (message.content or "") and message.redactions == {"email": 1}
        assert not mem.search("jane.doe", record_access=False)
    for file in store.rglob("*"):
        if file.is_file():
            assert SECRET_EMAIL.encode() not in file.read_bytes(), file


def test_a_refusal_never_repeats_a_value_of_the_source() -> None:
    from commands.transfer.ingest import _reason

    for message in ("details: Invalid enum value 'LEAK-hunter2' - at `$.severity`",
                    "invalid key 'LEAK hunter2 ///': use a-z, digits and _",
                    'role must be one of user, assistant (got "LEAK-hunter2")'):
        assert "hunter2" not in _reason(message)
