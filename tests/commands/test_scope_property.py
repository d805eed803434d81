"""Property: no user-scoped search or context ever returns another user's entry.

Random users, sessions (some without a user, some archived), entries of every
kind, preferences, memories and shared project entries; queries drawn from
the words written. Every text carries a marker word unique to it, so a leak
shows as another owner's marker in a result or a context block.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from commands import MemoryLog

_USERS = ("alice", "bob", "carol")
_WORDS = ("plan", "ledger", "postgres", "kafka", "deploy", "budget", "runbook", "cache")
_KINDS = ("message", "decision", "lesson", "task", "handoff", "project", "summary")

_session = st.tuples(st.sampled_from((*_USERS, None)), st.booleans(), st.sampled_from(("a1", "a2")))
_entry = st.tuples(st.integers(0, 5), st.sampled_from(_KINDS), st.lists(st.sampled_from(_WORDS), min_size=1,
                                                                         max_size=3))
_extra = st.tuples(st.sampled_from(("preference", "memory", "shared")), st.sampled_from(_USERS),
                   st.sampled_from(("style", "db", "tone")), st.lists(st.sampled_from(_WORDS), min_size=1,
                                                                      max_size=2))


@dataclass
class _World:
    """What was written and who owns it (a user, or None for the shared project context)."""

    owner: dict[str, str | None] = field(default_factory=dict)  # marker -> owner
    where: dict[str, str] = field(default_factory=dict)  # marker -> session
    sessions: list[tuple[str, str | None, bool]] = field(default_factory=list)
    count: int = 0

    def marker(self, owner: str | None) -> str:
        self.count += 1
        mark = f"zq{self.count}mark"
        self.owner[mark] = owner
        return mark


_Sessions = list[tuple[str | None, bool, str]]
_Entries = list[tuple[int, str, list[str]]]
_Extras = list[tuple[str, str, str, list[str]]]


def _build(mem: MemoryLog, sessions: _Sessions, entries: _Entries, extras: _Extras) -> _World:
    world = _World()
    for user, _, agent in sessions:
        world.sessions.append((mem.start_session(user_id=user, agent_ids=[agent]), user, False))
    for index, kind, words in entries:
        sid, user, _ = world.sessions[index % len(world.sessions)]
        # A session without a user is nobody's: no user may see it ("" is never a user).
        mark = world.marker(user if user is not None else "")
        world.where[mark] = sid
        _record(mem, kind, sid, " ".join([*words, mark]))
    for what, user, key, words in extras:
        text = " ".join([*words, world.marker(None if what == "shared" else user)])
        if what == "preference":
            mem.set_preference(user, key=key, value=text)
        elif what == "memory":
            mem.remember(user, key, text)
        else:
            mem.set_project_context(None, content=text)
    for i, (sid, user, _) in enumerate(world.sessions):
        if sessions[i][1]:
            mem.archive_session(sid)
            world.sessions[i] = (sid, user, True)
    return world


def _record(mem: MemoryLog, kind: str, sid: str, text: str) -> None:
    if kind == "message":
        mem.add_message(sid, role="user", content=text)
    elif kind == "decision":
        mem.record_decision(sid, decision=text)
    elif kind == "lesson":
        mem.record_lesson(sid, content=text)
    elif kind == "task":
        mem.add_task(sid, content=text)
    elif kind == "handoff":
        mem.record_handoff(sid, content=text)
    elif kind == "project":
        mem.set_project_context(sid, content=text)
    else:
        mem.record_summary(sid, content=text)


def _leaks(world: _World, text: str, user: str) -> list[str]:
    """Markers in ``text`` owned by neither ``user`` nor the shared context."""
    return [m for m, owner in world.owner.items() if m in text.split() or f"{m}…" in text
            if owner is not None and owner != user]


@settings(max_examples=25, deadline=None)
@given(sessions=st.lists(_session, min_size=1, max_size=5), entries=st.lists(_entry, max_size=14),
       extras=st.lists(_extra, max_size=6), query=st.sampled_from(("", *_WORDS)),
       archived=st.booleans())
def test_scoped_search_and_context_never_cross_users(
        sessions: _Sessions, entries: _Entries, extras: _Extras, query: str, archived: bool) -> None:
    """Every user-scoped search and every context holds only the reader's and shared texts
    (auto-restore off: a context of an archived session would restore it)."""
    with tempfile.TemporaryDirectory() as tmp, MemoryLog.open(Path(tmp) / "s", record_access=False,
                                                                  auto_restore=False) as mem:
        world = _build(mem, sessions, entries, extras)
        for user in _USERS:
            for source in ("entries", "both"):
                hits = mem.search(query, user_id=user, include_archived=archived, limit=1000, source=source)
                for hit in hits:
                    assert not _leaks(world, hit.content, user), (user, hit.id)
                    if not archived and hit.session_id is not None:
                        assert not any(s == hit.session_id and gone for s, _, gone in world.sessions)
        for sid, user, _ in world.sessions:
            block = mem.context(sid, query=query or None, budget_tokens=100_000)
            assert not _leaks(world, block.text, user or ""), sid
            gone = {s for s, _, archived_ in world.sessions if archived_ and s != sid}
            assert not [m for m, s in world.where.items() if s in gone and m in block.text.split()]
