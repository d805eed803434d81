"""Small source trees in the four seed formats, built from the seeds' own
examples (seed 000 sections 3.1-3.5, seed 001's tables, seed 002's vault entry,
seed 004's layout and LEARNINGS.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SID = "sess-2026-01-11-abc123"
SECRET_EMAIL = "jane.doe@example.com"

MANIFEST = {
    "session_id": SID, "created_at": "2026-01-11T10:00:00Z", "updated_at": "2026-01-11T14:30:00Z",
    "user_id": "user-789", "agent_ids": ["bmad-master", "architect", "analyst"],
    "metadata": {"project_name": "payment-system", "session_type": "architecture_review",
                 "tags": ["architecture", "payments", "scalability"]},
    "statistics": {"total_messages": 127, "total_decisions": 8, "total_findings": 15,
                   "size_bytes": 245678, "last_accessed": "2026-01-11T14:30:00Z"},
    "version": "1.0",
}
MESSAGES = [
    {"id": "msg-000", "timestamp": "2026-01-11T10:05:00Z", "agent_id": "architect", "role": "user",
     "content": f"We need a database for payments; mail me at {SECRET_EMAIL}."},
    {"id": "msg-001", "timestamp": "2026-01-11T10:05:23Z", "agent_id": "architect", "role": "assistant",
     "content": "Based on the requirements, I recommend PostgreSQL for ACID compliance.",
     "context": {"conversation_id": "conv-xyz", "parent_message_id": "msg-000",
                 "topic": "database_selection"},
     "metadata": {"tokens": 15, "processing_time_ms": 230, "references": ["dec-001", "finding-003"]},
     "decay_factor": 1.0},
]
DECISION = {
    "id": "dec-001", "timestamp": "2026-01-11T10:10:00Z", "made_by": "architect", "approved_by": ["user-789"],
    "decision": "Use PostgreSQL for primary database",
    "rationale": "ACID compliance required for financial transactions, proven scalability to 10K TPS",
    "alternatives_considered": [{"option": "MongoDB", "rejected_reason": "Eventual consistency risk"},
                                {"option": "MySQL", "rejected_reason": "Licensing concerns"}],
    "impact": "high", "tags": ["database", "architecture", "critical"],
    "references": {"conversations": ["msg-001"], "findings": ["finding-003"]}, "decay_factor": 1.0,
}
FINDING = {
    "id": "finding-003", "timestamp": "2026-01-11T10:08:15Z", "discovered_by": "analyst",
    "category": "scalability", "severity": "high",
    "description": "Database connection pooling not configured",
    "evidence": "Connection pool config missing from application.yml",
    "recommendation": "Implement HikariCP with max 50 connections", "status": "open",
    "tags": ["performance", "database", "configuration"], "decay_factor": 1.0,
}
PREFERENCE = {
    "id": "pref-001", "timestamp": "2026-01-11T10:00:00Z", "category": "communication",
    "key": "response_style",
    "value": "concise_with_examples", "context": "User prefers brief explanations followed by code examples",
    "confidence": 0.9, "learned_from": ["sess-2026-01-10-xyz", "sess-2026-01-11-abc"], "decay_factor": 1.0,
}


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def bmad_tree(root: Path) -> Path:
    """``root/.bmad/memory`` with one session (seed 000's examples) and shared preferences."""
    memory = root / ".bmad" / "memory"
    session = memory / "sessions" / SID
    session.mkdir(parents=True)
    (session / "manifest.json").write_text(json.dumps(MANIFEST, indent=2))
    _jsonl(session / "conversation.jsonl", MESSAGES)
    _jsonl(session / "decisions.jsonl", [DECISION])
    _jsonl(session / "findings.jsonl", [FINDING])
    _jsonl(session / "preferences.jsonl", [PREFERENCE])
    (memory / "shared").mkdir()
    shared = {"user_id": "user-789", "preferences": [
        {"id": "pref-100", "timestamp": "2026-01-10T09:00:00Z", "category": "code", "key": "language",
         "value": "python", "confidence": 0.8}]}
    (memory / "shared" / "user-preferences.json").write_text(json.dumps(shared, indent=2))
    return root


def picobot_tree(root: Path) -> Path:
    """``root/data/sessions.json``: seed 001's tables as a JSON snapshot."""
    data = root / "data"
    data.mkdir(parents=True)
    snapshot = {
        "sessions": [{
            "id": "tui-local-1", "channel_type": "tui", "channel_id": "local", "user_id": "tui:local",
            "permissions_json": "{}", "created_at": "2026-02-01 09:00:00",
            "last_active": "2026-02-01 09:05:00",
            "state_json": "{}", "summary": "The user set up a weekly report reminder.",
            "messages": [
                {"id": 1, "message_type": "system", "content": "You are PicoBot.", "tool_call_id": None,
                 "created_at": "2026-02-01 09:00:00", "seq_order": 0, "token_estimate": 4},
                {"id": 2, "message_type": "user", "content": "Remind me every Monday about the report.",
                 "created_at": "2026-02-01 09:01:00", "seq_order": 1},
                {"id": 3, "message_type": "tool", "content": "reminder scheduled", "tool_call_id": "call_42",
                 "created_at": "2026-02-01 09:01:05", "seq_order": 2},
                {"id": 4, "message_type": "assistant", "content": "Done: every Monday at 9.",
                 "created_at": "2026-02-01 09:01:06", "seq_order": 3},
            ]}],
        "user_memories": [{"id": 1, "user_id": "tui:local", "key": "report_day", "content": "Monday",
                           "source_session_id": "tui-local-1", "created_at": "2026-02-01 09:01:06",
                           "updated_at": "2026-02-01 09:01:06"}],
    }
    (data / "sessions.json").write_text(json.dumps(snapshot, indent=2))
    return data


VAULT_DECISION = """# Decisions

<!-- id:1773679871839 -->
## 2026-03-16T16:51 · #sse #architecture
We decided to use SSE instead of WebSockets.
---

<!-- id:1773679871000 -->
## 2026-03-15T10:00 · #react
We will use React with TypeScript for the components.
---
"""


def aiteam_tree(root: Path) -> Path:
    """``root/.memory``: ``_project.md`` and two agents' categories (seed 002)."""
    vault = root / ".memory"
    (vault / "bmad-master").mkdir(parents=True)
    (vault / "dev").mkdir()
    (vault / ".vault").mkdir()
    (vault / "conversations").mkdir()
    (vault / "_project.md").write_text(
        "# Project\n\nStack: Next.js dashboard driving the Cursor agent CLI.\n")
    (vault / "bmad-master" / "decisions.md").write_text(VAULT_DECISION)
    (vault / "bmad-master" / "handoffs.md").write_text(
        "<!-- id:1773679872000 -->\n## 2026-03-16T17:00 · #auto-handoff #session-close\n"
        "[User]: wire the SSE endpoint\n[Agent]: endpoint wired and tested\n---\n")
    (vault / "dev" / "lessons.md").write_text(
        "<!-- id:1773679873000 -->\n## 2026-03-17T08:30 · #bug\n"
        "I learned that the problem was a missing await in the write queue.\n---\n")
    (vault / "dev" / "tasks.md").write_text(
        "<!-- id:1773679874000 -->\n## 2026-03-17T09:00\n- [ ] add retries to the vault writes\n---\n"
        "<!-- id:1773679875000 -->\n## 2026-03-17T09:10\n- [x] rebuild the BM25 index\n---\n")
    (vault / "conversations" / "dev.json").write_text('{"agentId": "dev", "messages": []}')
    return root


def gimli_tree(root: Path) -> Path:
    """``root/.gimli/agents/main``: one transcript, sessions.json, LEARNINGS.md (seed 004)."""
    agent = root / ".gimli" / "agents" / "main"
    (agent / "sessions").mkdir(parents=True)
    (agent / "agent").mkdir()
    sid = "5f0c2a9e-1b7d-4c1e-9a51-0d2f3e4b5c6d"
    (agent / "sessions" / "sessions.json").write_text(json.dumps(
        {"agent:main:main": {"sessionId": sid, "updatedAt": 1736900000000}}))
    _jsonl(agent / "sessions" / f"{sid}.jsonl", [
        {"type": "session", "id": sid, "timestamp": "2025-01-15T10:00:00.000Z"},
        {"type": "message", "id": "m1", "timestamp": "2025-01-15T10:00:01.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": "Which API version do we call?"}]}},
        {"type": "message", "id": "m2", "parentId": "m1", "timestamp": "2025-01-15T10:00:03.000Z",
         "message": {"role": "assistant", "content": "The endpoint moved to v2; I call v2 now."}},
        {"type": "model_change", "id": "x1", "timestamp": "2025-01-15T10:00:04.000Z"},
    ])
    (agent / "agent" / "LEARNINGS.md").write_text(
        "# Agent Learnings\n\n## User Preferences\n- [2024-01-15] User prefers concise responses\n\n"
        "## Corrections\n- [2024-01-14] API endpoint changed to v2\n\n"
        "## Successful Patterns\n- [2024-01-13] Use bullet points for lists\n\n"
        "## Tool Usage\n- [2024-01-12] Always confirm before file deletion\n")
    return root / ".gimli"
