"""The examples in docs/cli.md and docs/library.md run as written."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from commands.cli import cli

DOCS = Path(__file__).resolve().parent.parent / "docs"


def blocks(name: str, lang: str) -> list[str]:
    """Fenced code blocks of one language in a doc."""
    text = (DOCS / name).read_text()
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_cli_examples_run(tmp_path: Path) -> None:
    """Every `$ memlog` line of docs/cli.md exits 0, in order, on a fresh store."""
    names: dict[str, str] = {}
    runner = CliRunner()
    lines = [ln for b in blocks("cli.md", "console") for ln in b.splitlines() if ln.startswith("$ memlog")]
    assert len(lines) > 20
    for line in lines:
        command, _, capture = line[2:].partition("#")
        for key, value in names.items():
            command = command.replace(f"${key}", value)
        argv = shlex.split(command)[1:]
        result = runner.invoke(cli, ["--dir", str(tmp_path / "store"), "--json", *argv])
        assert result.exit_code == 0, (line, result.stderr)
        if capture.strip():
            names[capture.strip()] = json.loads(result.stdout)["id"]


def test_library_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The python blocks of docs/library.md run in order in one directory."""
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {}
    code = blocks("library.md", "python")
    assert len(code) >= 5
    for block in code:
        exec(compile(block, "docs/library.md", "exec"), scope)
    assert os.path.isdir(tmp_path / "store")


def test_resources_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The python blocks of docs/resources.md run in order in one directory."""
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {}
    code = blocks("resources.md", "python")
    assert len(code) >= 6
    for block in code:
        exec(compile(block, "docs/resources.md", "exec"), scope)
    assert os.path.isdir(tmp_path / "store")
