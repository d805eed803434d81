"""A query with text but no word the index could hold is refused; an empty
text still lists everything (the browse mode)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from commands import MemoryLog
from commands.cli import cli
from eventstore import E_INVALID_QUERY, InvalidQueryError
from projections import SearchQuery, run_search

NO_WORDS = ["*", "🙂", "x" * 100, "  ?! -- 🙂🙂 ", f"{'y' * 41} {'z' * 60}"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("q") / "store"
    with MemoryLog.open(path) as mem:
        sid = mem.start_session()
        for i in range(3):
            mem.add_message(sid, role="user", content=f"postgres note {i} 🙂 *")
    return path


@pytest.mark.parametrize("text", NO_WORDS)
def test_a_query_without_a_word_is_refused(store: Path, text: str) -> None:
    """Library, projections and CLI refuse it with E_INVALID_QUERY, echoing nothing of it."""
    with MemoryLog.open(store) as mem:
        with pytest.raises(InvalidQueryError, match="no word to search for"):
            mem.search(text, record_access=False)
        mem.proj.catch_up(search=True)
        assert mem.proj.search_index is not None
        with pytest.raises(InvalidQueryError):
            run_search(mem.proj.search_index, SearchQuery(text=text), None)
    result = CliRunner().invoke(cli, ["--dir", str(store), "search", text])
    assert result.exit_code == 2
    assert E_INVALID_QUERY in result.stderr and text.strip() not in result.stderr


def test_an_empty_query_still_browses(store: Path) -> None:
    """"" (and blanks) list every entry; a word next to punctuation still searches."""
    with MemoryLog.open(store) as mem:
        assert len(mem.search("", record_access=False)) == 3
        assert len(mem.search("   ", record_access=False)) == 3
        assert len(mem.search("* postgres 🙂", record_access=False)) == 3
        assert len(mem.search("note 1", record_access=False)) >= 1
