"""Fixtures for CLI and facade tests."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from commands import MemoryLog
from commands.cli import cli
from eventstore import EventLog

Run = Callable[..., tuple[int, Any, str]]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """An empty data directory path."""
    return tmp_path / "store"


@pytest.fixture
def run(store: Path) -> Run:
    """Invoke the CLI with ``--json`` on ``store``; returns (exit code, parsed stdout, stderr)."""
    def invoke(*args: str, as_json: bool = True, env: dict[str, str] | None = None,
               stdin: str | None = None) -> tuple[int, Any, str]:
        flags = ["--dir", str(store)] + (["--json"] if as_json else [])
        result = CliRunner().invoke(cli, [*flags, *args], env=env, input=stdin)
        out: Any = result.stdout
        if as_json and result.exit_code == 0 and out.strip():
            out = json.loads(out)
        return result.exit_code, out, result.stderr

    return invoke


def head_of(store: Path) -> int:
    """The log head seq of a store (0 if it has no log yet)."""
    if not (store / "log").exists():
        return 0
    with EventLog.open(store / "log") as log:
        return log.head().seq


def marker() -> str:
    """A unique text to scan the store's bytes for."""
    return "zq" + secrets.token_hex(10)


def views_dump(mem: MemoryLog) -> dict[str, Any]:
    """Every views database of ``mem``, caught up (to compare live with replayed)."""
    mem.proj.catch_up()
    assert mem.proj.views is not None
    return mem.proj.views.dump()
