"""Neighbouring turns: an answer often sits in the turn after the one that
holds the question's words. The entries recorded just before and after the
best text candidates, in the same session, join the candidates (for a query
of two words or more: one word is a lookup) and gain a share of their
neighbour's score; the query's filters still apply to them."""

from __future__ import annotations

from pathlib import Path

from commands import MemoryLog
from commands.app.recall.search import find, make_query
from projections import Scope


def _contents(mem: MemoryLog, text: str, **kw: object) -> list[str]:
    return [r.content for r in find(mem.store, make_query(text, **kw))]  # type: ignore[arg-type]


def test_the_turn_after_the_question_words_is_found(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "s", embedder=None) as mem:
        sid = mem.start_session(user_id="alice")
        mem.add_message(sid, role="user", content="lunch was pasta again")
        mem.add_message(sid, role="user", content="which city did you move to last year?")
        mem.add_message(sid, role="assistant", content="Lisbon, in the spring")
        mem.add_message(sid, role="user", content="nice weather today")
        found = _contents(mem, "which city did you move to")
        assert found[:2] == ["which city did you move to last year?", "Lisbon, in the spring"]


def test_a_neighbour_in_another_session_or_filtered_out_does_not_join(tmp_path: Path) -> None:
    with MemoryLog.open(tmp_path / "s", embedder=None) as mem:
        alice = mem.start_session(user_id="alice")
        bob = mem.start_session(user_id="bob")
        mem.add_message(alice, role="user", content="which city did you move to?")
        mem.add_message(bob, role="user", content="bob's secret: Oslo")   # recorded next, Bob's session
        mem.add_message(alice, role="user", content="a reply recorded later")
        assert "bob's secret: Oslo" not in _contents(mem, "city move")
        assert _contents(mem, "city") == ["which city did you move to?"]  # one word: no neighbours
        mem.record_lesson(alice, content="a lesson right after the question")
        mem.add_message(alice, role="user", content="which town did you relocate to?")
        mem.record_lesson(alice, content="always answer with the city")
        assert _contents(mem, "town relocate", kinds=["message"]) == ["which town did you relocate to?"]
        found = _contents(mem, "town relocate")
        assert found[0] == "which town did you relocate to?"
        assert set(found[1:]) == {"a lesson right after the question", "always answer with the city"}
        scoped = _contents(mem, "town relocate", scope=Scope(session_ids=(bob,)))
        assert scoped == []
