"""Import from other agents' memory formats, and export memlog's own.

One reader per format turns a source tree into neutral records
(:mod:`.model`), each with its ``file:line``; :func:`ingest` decides them all
through the app layer and writes them in one transaction; :mod:`.export`
writes JSONL (which ``import jsonl`` reads back) or markdown.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from eventstore import ImportRecordError, NotFoundError

from . import aiteam, bmad, gimli, jsonl, picobot
from .export import export_jsonl, export_markdown, exported
from .ingest import BadRecord, ImportReport, ingest, refuse_unreadable
from .model import Record

__all__ = [
    "FORMATS",
    "BadRecord",
    "ImportReport",
    "after_import",
    "export_jsonl",
    "export_markdown",
    "exported",
    "ingest",
    "read_source",
    "refuse_unreadable",
]

FORMATS: dict[str, Callable[[Path], list[Record]]] = {
    "bmad": bmad.read, "picobot": picobot.read, "aiteam": aiteam.read, "gimli": gimli.read,
    "jsonl": jsonl.read,
}


def read_source(fmt: str, path: Path) -> list[Record]:
    """Every record of a source (bad ones as :class:`~.model.Bad`)."""
    try:
        return FORMATS[fmt](path)
    except FileNotFoundError as exc:
        raise NotFoundError(str(exc)) from None
    except UnicodeDecodeError:
        raise ImportRecordError(f"{path}: a file is not valid UTF-8; nothing was written",
                                file=str(path), line=0, reason="not valid UTF-8") from None


def after_import(fmt: str, path: Path) -> None:
    """What a format does after a successful import (picobot renames its snapshot)."""
    if fmt == "picobot":
        picobot.finish(path)
