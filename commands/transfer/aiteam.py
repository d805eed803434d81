"""Seed 002's ``.memory`` vault: ``{agentId}/{decisions,lessons,handoffs,tasks,
projects}.md`` plus the global ``_project.md``.

Each vault entry is::

    <!-- id:1773679871839 -->
    ## 2026-03-16T16:51 · #react #typescript
    Free-form memory content in markdown.
    ---

Each agent becomes one session (``aiteam-{agentId}``, the agent its only
agent); ``_project.md`` becomes the project context shared by every session.
``conversations/`` (raw, trimmed history) and ``.vault/`` (index, checkpoints)
are not imported.
"""

from __future__ import annotations

import re
from pathlib import Path

from .model import (
    Bad,
    EntryRec,
    Origin,
    Record,
    SessionRec,
    derived_id,
    event_id,
    session_id_for,
    source_time,
)

__all__ = ["FORMAT", "read"]

FORMAT = "aiteam"
CATEGORIES = {"decisions": "decision", "lessons": "lesson", "handoffs": "handoff", "tasks": "task",
              "projects": "project"}
_ID_LINE = re.compile(r"^<!--\s*id:\s*(\S+?)\s*-->\s*\Z")
_HEADER = re.compile(r"^##\s+(\S+)(.*)\Z")
_TAG = re.compile(r"#([\w-]+)")
_TASK = re.compile(r"^-\s*\[([ xX])\]\s*")


def root_of(path: Path) -> Path:
    """The vault a path names (a directory holding ``.memory``, or the vault)."""
    vault = path / ".memory"
    if vault.is_dir():
        return vault
    if path.is_dir():
        return path
    raise FileNotFoundError(f"no .memory vault at {path}")


def read(path: Path) -> list[Record]:
    """The project context, then each agent's session and entries."""
    root = root_of(path)
    out: list[Record] = []
    project = root / "_project.md"
    if project.is_file():
        text = project.read_text(encoding="utf-8").strip()
        if text:
            out.append(EntryRec(Origin("_project.md", 1), event_id(FORMAT, "_project.md"),
                                derived_id(FORMAT, "project", "_project.md"), "project", text,
                                occurred_at=int(project.stat().st_mtime * 1_000_000)))
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and p.name[0] not in "._"):
        files = [folder / f"{name}.md" for name in CATEGORIES if (folder / f"{name}.md").is_file()]
        if folder.name == "conversations" or not files:
            continue
        agent = folder.name
        sid = session_id_for(FORMAT, f"aiteam-{agent}")
        out.append(SessionRec(Origin(f"{agent}/", 0), event_id(FORMAT, f"session:{agent}"), sid,
                              agent_ids=(agent,), tags=("aiteam",)))
        for file in files:
            out.extend(_entries(file, f"{agent}/{file.name}", agent, sid))
    return out


def _blocks(file: Path) -> list[tuple[int, str, list[str]]]:
    """The entries of a category file: (line of the id comment, id, lines)."""
    blocks: list[tuple[int, str, list[str]]] = []
    current: list[str] | None = None
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        found = _ID_LINE.match(line.strip())
        if found:
            current = []
            blocks.append((number, found.group(1), current))
        elif current is not None:
            if line.strip() == "---":
                current = None
            else:
                current.append(line)
    return blocks


def _entries(file: Path, rel: str, agent: str, sid: str) -> list[Record]:
    category = file.stem
    kind = CATEGORIES[category]
    out: list[Record] = []
    for number, source_id, lines in _blocks(file):
        origin = Origin(rel, number)
        while lines and not lines[0].strip():
            lines.pop(0)
        header = _HEADER.match(lines[0].strip()) if lines else None
        if header is None:
            out.append(Bad(origin, "an entry needs a '## date' line after its id"))
            continue
        content = "\n".join(lines[1:]).strip()
        source = f"{agent}/{category}/{source_id}"
        details: dict[str, object] | None = None
        if kind == "task":
            box = _TASK.match(content)
            details = {"done": bool(box and box.group(1) in "xX")}
            content = content[box.end():] if box else content
        elif kind == "decision":
            details = {"made_by": agent}
        tags = tuple(dict.fromkeys(_TAG.findall(header.group(2))))
        out.append(EntryRec(origin, event_id(FORMAT, source), derived_id(FORMAT, kind, source), kind, content,
                            session_id=sid, agent_id=agent, tags=tags,
                            occurred_at=source_time(header.group(1)), details=details))
    return out
