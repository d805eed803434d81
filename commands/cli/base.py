"""What every command shares: the :class:`Context` (options, the store it
opens, output), the group that maps errors to one line, and click's choices
built from the vocabulary.

With ``--json`` each command prints one JSON document on stdout; progress and
logs go to stderr. Errors print one ``Error: ...`` line on stderr and exit
non-zero; nothing is written.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import msgspec

from eventstore import (
    E_ABORTED,
    E_INTERNAL,
    E_USAGE,
    ENTRY_KINDS,
    INTERNAL_EXIT_CODE,
    LEVELS,
    ROLES,
    SORTS,
    MemlogError,
)

from ..app import PATTERNS, load_settings
from ..memory import MemoryLog

__all__ = ["KINDS", "LEVEL", "PATTERN", "ROLE", "SORT", "Context", "MemlogGroup", "pass_context"]

KINDS = click.Choice(ENTRY_KINDS)
ROLE = click.Choice(ROLES)
LEVEL = click.Choice(LEVELS)
SORT = click.Choice(SORTS)
PATTERN = click.Choice(tuple(PATTERNS))

_json = msgspec.json.Encoder()


class Context:
    """Options shared by every command, and the store they open."""

    def __init__(self, data_dir: Path, as_json: bool) -> None:
        self.data_dir = data_dir
        self.json = as_json

    @property
    def log_dir(self) -> Path:
        """Where the event log lives inside the data directory."""
        return self.data_dir / "log"

    @contextlib.contextmanager
    def memory(self, *, create: bool = True, **overrides: Any) -> Iterator[MemoryLog]:
        """Open the store for one command; a read passes ``create=False``, so a
        directory without a store is an error (``E_NO_STORE``) and nothing is created."""
        with MemoryLog.open(self.data_dir, load_settings(self.data_dir, overrides), create=create) as mem:
            _announce(mem)
            yield mem

    def reading(self) -> contextlib.AbstractContextManager[MemoryLog]:
        """Open an existing store for a read command."""
        return self.memory(create=False)

    def write(self, action: Callable[[MemoryLog], str | None], label: str) -> None:
        """Run one write on the store and print its id and seq."""
        with self.memory() as mem:
            item = action(mem)
            seq = mem.last_seq
        self.emit({"id": item, "seq": seq}, f"{label} {item} (seq {seq})" if item else f"{label} (seq {seq})")

    def emit(self, data: Any, text: str | Callable[[], str]) -> None:
        """Print ``data`` as JSON with ``--json``, else the human text."""
        if self.json:
            click.echo(_json.encode(data).decode())
        else:
            click.echo(text() if callable(text) else text)


class MemlogGroup(click.Group):
    """Maps every error to one ``Error:`` line and its exit code (DESIGN section 7)."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run without click's standalone handling, so usage errors are one line too."""
        kwargs["standalone_mode"] = False
        try:
            return super().main(*args, **kwargs)
        except click.ClickException as exc:  # usage errors, bad option values
            click.echo(f"Error: {exc.format_message()} [{E_USAGE}]", err=True)
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo(f"Error: aborted; nothing was written [{E_ABORTED}]", err=True)
            sys.exit(1)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemlogError as exc:
            click.echo(f"Error: {exc.message} [{exc.code}]", err=True)
            sys.exit(exc.exit_code)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Exception as exc:
            # A bug, not bad input: name it without echoing a message that might
            # quote content; -v shows the traceback.
            if ctx.params.get("verbose"):
                raise
            click.echo(f"Error: internal error ({type(exc).__name__}); run with -v for details "
                       f"[{E_INTERNAL}]", err=True)
            sys.exit(INTERNAL_EXIT_CODE)


def _announce(mem: MemoryLog) -> None:
    """Say on stderr what happened to purges before this command (stdout stays
    the command's own)."""
    if mem.recovered:
        click.echo(f"note: finished {len(mem.recovered)} purge(s) that a crash had interrupted", err=True)
    waiting = mem.pending_purges()
    if waiting["pending"]:
        click.echo(f"note: {waiting['pending']} purge(s) pending; run `memlog purge`", err=True)
    if waiting["running"]:
        click.echo(f"note: {waiting['running']} purge(s) running in another process", err=True)


pass_context = click.make_pass_decorator(Context)
