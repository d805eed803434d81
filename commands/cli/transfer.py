"""CLI commands that move memory in and out: ``import`` (bmad, picobot,
aiteam, gimli, and memlog's own jsonl) and ``export`` (jsonl, markdown).

``import`` reads the whole source, decides every record, then writes them in
one transaction: a bad record refuses the import (``E_IMPORT_BAD_RECORD``,
naming ``file:line``) unless ``--skip-bad``. ``--dry-run`` writes nothing, not
even a store directory. A progress bar runs on stderr (not with ``--json``).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click

from eventstore import InvalidInputError

from .base import Context, LazyChoice, pass_context

if TYPE_CHECKING:
    from ..memory import MemoryLog
    from ..transfer import ImportReport

__all__ = ["export", "import_"]


def _formats() -> tuple[str, ...]:
    from ..transfer import FORMATS
    return tuple(FORMATS)


@click.command("import")
@click.argument("fmt", metavar="FORMAT", type=LazyChoice(_formats))
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Validate and count; write nothing.")
@click.option("--skip-bad", is_flag=True, help="Write the good records; report the bad ones.")
@pass_context
def import_(ctx: Context, fmt: str, path: Path, dry_run: bool, skip_bad: bool) -> None:
    """Import memory kept in FORMAT (bmad, picobot, aiteam, gimli, or memlog's own jsonl) from PATH.

    Ids derive from the source's, so a second import adds nothing. Nothing is
    written when a record is bad, unless --skip-bad."""
    from ..transfer import after_import, ingest, read_source, refuse_unreadable
    recs = read_source(fmt, path)
    refuse_unreadable(recs, skip_bad)  # before a store is opened (or created)
    with _store(ctx, dry_run) as mem, _bar(ctx, len(recs)) as progress:
        report = ingest(mem.store, fmt, recs, skip_bad=skip_bad, dry_run=dry_run, progress=progress)
    if not dry_run:
        after_import(fmt, path)
    ctx.emit(report.to_dict(), lambda: _report_text(report))


@contextlib.contextmanager
def _store(ctx: Context, dry_run: bool) -> Iterator[MemoryLog]:
    """The store to import into; a dry run on a directory without a store
    decides in a scratch store (the same settings) and leaves none behind."""
    from ..app import holds_store, load_settings
    from ..memory import MemoryLog
    if not dry_run or holds_store(ctx.data_dir):
        with ctx.memory(create=not dry_run) as mem:
            yield mem
        return
    settings = load_settings(ctx.data_dir if ctx.data_dir.is_dir() else None)
    with tempfile.TemporaryDirectory(prefix="memlog-dry-run-") as scratch, \
            MemoryLog.open(Path(scratch) / "store", settings, embedder=None) as mem:
        yield mem


@contextlib.contextmanager
def _bar(ctx: Context, total: int) -> Iterator[Callable[[int], None] | None]:
    if ctx.json or total == 0:
        yield None
        return
    with click.progressbar(length=total, label="importing", file=sys.stderr) as bar:
        yield bar.update


def _report_text(report: ImportReport) -> str:
    verb = "would write" if report.dry_run else "wrote"
    kinds = ", ".join(f"{n} {k}" for k, n in report.by_kind.items()) or "nothing new"
    lines = [f"{report.format}: {report.records} records read; {verb} {report.written} ({kinds}); "
             f"{report.already_present} already present"]
    if report.bad:
        lines.append(f"skipped {len(report.bad)} bad record(s):")
        lines.extend(f"  {b.file}:{b.line}: {b.reason}" for b in report.bad)
    if not report.dry_run and report.seq:
        lines.append(f"log head: seq {report.seq}")
    return "\n".join(lines)


@click.command()
@click.option("--format", "fmt", type=click.Choice(("jsonl", "markdown")), default="jsonl", show_default=True)
@click.option("--user", "user_id", help="Only this user's sessions, entries and memories.")
@click.option("--session", "session_id", help="Only this session and its entries.")
@click.option("--as-of", "as_of", help="As of a time (ISO 8601 with zone) or @SEQ.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="File (default stdout).")
@pass_context
def export(ctx: Context, fmt: str, user_id: str | None, session_id: str | None, as_of: str | None,
           output: Path | None) -> None:
    """Export memory as JSONL (import it back with `memlog import jsonl`) or markdown.

    The file is created 0600. It may not lie inside the data directory: a later
    deletion rewrites memlog's own files only and could not erase it there."""
    if output is not None and output.resolve().is_relative_to(ctx.data_dir.resolve()):
        raise InvalidInputError("--output lies inside the data directory, where a deletion could not "
                                "erase it; write the export elsewhere")
    from ..transfer import export_jsonl, export_markdown
    with ctx.reading() as mem:
        point = None if as_of is None else mem.log.resolve_point(as_of)
        write = export_jsonl if fmt == "jsonl" else export_markdown
        lines = write(mem.store, user_id=user_id, session_id=session_id, as_of=point)
        if output is None:
            for line in lines:
                click.echo(line, nl=False)
            return
        fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(fd, "w", encoding="utf-8") as handle:
            handle.writelines(lines)
    ctx.emit({"output": str(output)}, f"exported to {output}")
