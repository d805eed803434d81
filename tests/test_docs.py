"""The examples in docs/cli.md, docs/library.md, docs/audit.md, docs/integrations.md, docs/search.md
and docs/scale-out.md run as written."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
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


def test_audit_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The python block of docs/audit.md runs as written."""
    monkeypatch.chdir(tmp_path)
    code = blocks("audit.md", "python")
    assert len(code) == 1
    exec(compile(code[0], "docs/audit.md", "exec"), {})


def test_integrations_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/integrations.md: every ``$ memlog`` line exits 0, in order, in a
    directory holding the seed trees the import examples name; then each
    section's python blocks run in order (one namespace per section)."""
    from .transfer_trees import aiteam_tree, bmad_tree, gimli_tree, picobot_tree

    monkeypatch.chdir(tmp_path)
    bmad_tree(tmp_path)
    picobot_tree(tmp_path)
    aiteam_tree(tmp_path)
    gimli_tree(tmp_path / "home")
    text = (DOCS / "integrations.md").read_text()
    lines = [ln for b in blocks("integrations.md", "console") for ln in b.splitlines()
             if ln.startswith("$ memlog")]
    assert len(lines) >= 6
    for line in lines:
        result = CliRunner().invoke(cli, shlex.split(line[2:])[1:])
        assert result.exit_code == 0, (line, result.stderr)
    assert (tmp_path / "data" / "sessions.json.migrated").is_file()
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    assert [s.split("\n", 1)[0] for s in sections] == [
        "MCP: `memlog mcp`", "LangGraph: `MemlogStore`", "Import and export"]
    for section in sections:
        scope: dict[str, object] = {}
        for block in re.findall(r"```python\n(.*?)```", section, flags=re.S):
            exec(compile(block, "docs/integrations.md", "exec"), scope)
    assert (tmp_path / "mcp-store").is_dir() and (tmp_path / "lg-store").is_dir()


def test_search_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The python blocks of docs/search.md run in order in one directory and
    namespace (scores, identifiers, a query that matches nothing)."""
    pytest.importorskip("numpy")  # the examples search in every mode
    monkeypatch.chdir(tmp_path)
    scope: dict[str, object] = {}
    code = blocks("search.md", "python")
    assert len(code) >= 2
    for block in code:
        exec(compile(block, "docs/search.md", "exec"), scope)


def test_lifecycle_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The python blocks of docs/lifecycle.md run in order: those before
    "## Memory resources" in one directory and namespace, the resources' in another."""
    text = (DOCS / "lifecycle.md").read_text()
    shaping, resources = text.split("\n## Memory resources\n")
    for name, part, least in (("shaping", shaping, 5), ("resources", resources, 6)):
        (tmp_path / name).mkdir()
        monkeypatch.chdir(tmp_path / name)
        scope: dict[str, object] = {}
        code = re.findall(r"```python\n(.*?)```", part, flags=re.S)
        assert len(code) >= least
        for block in code:
            exec(compile(block, "docs/lifecycle.md", "exec"), scope)
    assert os.path.isdir(tmp_path / "resources" / "store")


@pytest.mark.nats_cluster
def test_scale_out_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/scale-out.md: the python blocks run in order from the repository
    root (they start and stop a throwaway 3-node cluster)."""
    monkeypatch.chdir(DOCS.parent)
    scope: dict[str, object] = {}
    code = blocks("scale-out.md", "python")
    assert len(code) >= 3
    try:
        for block in code:
            exec(compile(block, "docs/scale-out.md", "exec"), scope)
    finally:
        cluster = scope.get("cluster")
        if cluster is not None:
            cluster.stop()  # type: ignore[attr-defined]
        if isinstance(scratch := scope.get("scratch"), str):
            shutil.rmtree(scratch, ignore_errors=True)
