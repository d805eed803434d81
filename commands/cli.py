"""The ``memlog`` command line (DESIGN section 7).

Every command takes ``--dir`` (default ``./.memlog``, env ``MEMLOG_DIR``) and
``--json``. With ``--json`` each command prints one JSON document on stdout;
progress and logs go to stderr. Errors print one ``Error: ...`` line on stderr
and exit non-zero; nothing is written.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import msgspec

from eventstore import MemlogError

from ._logging import configure_logging
from .memory import MemoryLog
from .settings import load_settings

__all__ = ["Context", "cli", "main", "pass_context"]

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
    def memory(self, **overrides: Any) -> Iterator[MemoryLog]:
        """Open the store for one command."""
        with MemoryLog.open(self.data_dir, load_settings(self.data_dir, overrides)) as mem:
            yield mem

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
            click.echo(f"Error: {exc.format_message()} [E_USAGE]", err=True)
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Error: aborted; nothing was written [E_ABORTED]", err=True)
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
                       "[E_INTERNAL]", err=True)
            sys.exit(70)


@click.group(cls=MemlogGroup)
@click.option("--dir", "data_dir", type=click.Path(path_type=Path), envvar="MEMLOG_DIR",
              default=Path(".memlog"), show_default=True, help="Data directory.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option("-v", "--verbose", is_flag=True, help="Debug logs on stderr.")
@click.pass_context
def cli(ctx: click.Context, data_dir: Path, as_json: bool, verbose: bool) -> None:
    """memlog: an event-sourced memory for AI agents that can audit and forget."""
    configure_logging(verbose)
    ctx.obj = Context(data_dir, as_json)


pass_context = click.make_pass_decorator(Context)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="memlog")


# The command modules register themselves on ``cli``; imported last on purpose.
from . import _cli_admin, _cli_audit, _cli_privacy, _cli_read, _cli_write  # noqa: E402, F401
