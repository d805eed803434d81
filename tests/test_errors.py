"""One error tree: every error class lives in eventstore/errors.py with its code
as a named constant, and docs/cli.md's error table lists every code."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from commands import MemoryLog
from eventstore import EventLog, InvalidEventError, InvalidInputError, SessionStarted, errors

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("eventstore", "projections", "commands", "memlog")


def _classes() -> list[type[errors.MemlogError]]:
    return [c for c in vars(errors).values()
            if isinstance(c, type) and issubclass(c, errors.MemlogError)]


def test_every_error_class_lives_in_the_error_module() -> None:
    """No module but eventstore/errors.py defines an exception class."""
    outside = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if path == ROOT / "eventstore" / "errors.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ClassDef) and any(
                        isinstance(b, ast.Name) and (b.id.endswith(("Error", "Exception")))
                        for b in node.bases):
                    outside.append(f"{path.relative_to(ROOT)}: {node.name}")
    assert outside == []


def test_every_code_is_a_named_constant_in_codes() -> None:
    """Each class's code is one of the E_* constants, and CODES lists each constant once."""
    constants = {v for k, v in vars(errors).items() if k.startswith("E_")}
    assert set(errors.CODES) == constants
    assert len(errors.CODES) == len(set(errors.CODES))
    assert {c.code for c in _classes()} <= constants


def test_no_code_is_spelled_out_of_the_error_module() -> None:
    """Code passes codes by name: no "E_..." string literal outside eventstore/errors.py."""
    spelled = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if path == ROOT / "eventstore" / "errors.py":
                continue
            tree = ast.parse(path.read_text())
            listed = {id(n) for a in ast.walk(tree) if isinstance(a, ast.Assign)
                      and any(isinstance(t, ast.Name) and t.id == "__all__" for t in a.targets)
                      for n in ast.walk(a.value)}
            spelled += [f"{path.relative_to(ROOT)}: {n.value}" for n in ast.walk(tree)
                        if isinstance(n, ast.Constant) and isinstance(n.value, str)
                        and re.fullmatch(r"E_[A-Z_]+", n.value) and id(n) not in listed]
    assert spelled == []


def test_the_cli_doc_has_a_row_for_every_code() -> None:
    """docs/cli.md's error table names every code of CODES, with the class's exit code."""
    text = (ROOT / "docs" / "cli.md").read_text()
    rows = {m.group(1): int(m.group(2))
            for m in re.finditer(r"^\|\s*`(E_[A-Z_]+)`\s*\|\s*(\d+)\s*\|", text, re.MULTILINE)}
    missing = [code for code in errors.CODES if code not in rows]
    assert missing == []
    for cls in _classes():
        assert rows[cls.code] == cls.exit_code, cls.code
    assert rows[errors.E_INTERNAL] == errors.INTERNAL_EXIT_CODE


def test_a_long_refused_value_is_cut_in_the_message(tmp_path: Path) -> None:
    """An "id" of 300 characters (text pasted in the wrong place) is not repeated whole."""
    pasted = "my card number is 4111 " * 14
    with MemoryLog.open(tmp_path / "m") as mem, pytest.raises(InvalidInputError) as caught:
        mem.start_session(user_id=pasted)
    assert "card" not in str(caught.value) and f"a text of {len(pasted)} characters" in str(caught.value)
    with EventLog.open(tmp_path / "log") as log, pytest.raises(InvalidEventError) as raised:
        log.append(pasted, [SessionStarted(session_id="s1")], actor="t")
    assert "card" not in str(raised.value) and "characters" in str(raised.value)


def test_shown_names_what_it_does_not_repeat() -> None:
    assert errors.shown("s1") == "'s1'" and errors.shown("x" * 50) == "<a text of 50 characters>"
    assert errors.shown(10**5000) == "<a very large number>"  # repr would raise ValueError
    assert errors.shown(list(range(30))) == "<a list value>" and errors.shown(b"x" * 60) == "<60 bytes>"
