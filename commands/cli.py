"""The ``memlog`` command line (DESIGN section 7).

Every command takes ``--dir`` (default ``./.memlog``, env ``MEMLOG_DIR``) and
``--json``. With ``--json`` each command prints one JSON document on stdout;
progress and logs go to stderr. Errors print one ``Error: ...`` line on stderr
and exit non-zero; nothing is written.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import msgspec

from eventstore import EventLog, InvalidInputError, MemlogError, parse_time
from projections import Projections

from ._logging import configure_logging

__all__ = ["cli", "main"]

F = TypeVar("F", bound=Callable[..., Any])
_json = msgspec.json.Encoder()


class Context(msgspec.Struct):
    """Options shared by every command."""

    data_dir: Path
    json: bool

    @property
    def log_dir(self) -> Path:
        """Where the event log lives inside the data directory."""
        return self.data_dir / "log"

    def emit(self, data: Any, text: str | Callable[[], str]) -> None:
        """Print ``data`` as JSON with ``--json``, else the human text."""
        if self.json:
            click.echo(_json.encode(data).decode())
        else:
            click.echo(text() if callable(text) else text)


class MemlogGroup(click.Group):
    """Maps every MemlogError to one ``Error:`` line and its exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemlogError as exc:
            click.echo(f"Error: {exc.message} [{exc.code}]", err=True)
            sys.exit(exc.exit_code)


@click.group(cls=MemlogGroup)
@click.option("--dir", "data_dir", type=click.Path(path_type=Path), envvar="MEMLOG_DIR",
              default=Path(".memlog"), show_default=True, help="Data directory.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option("-v", "--verbose", is_flag=True, help="Debug logs on stderr.")
@click.pass_context
def cli(ctx: click.Context, data_dir: Path, as_json: bool, verbose: bool) -> None:
    """memlog: an event-sourced memory for AI agents that can audit and forget."""
    configure_logging(verbose)
    ctx.obj = Context(data_dir=data_dir, json=as_json)


pass_context = click.make_pass_decorator(Context)


@cli.command()
@pass_context
def init(ctx: Context) -> None:
    """Create the data directory and an empty log."""
    with EventLog.open(ctx.log_dir) as log:
        head = log.head()
    ctx.emit({"dir": str(ctx.data_dir), "head_seq": head.seq},
             f"memlog store ready in {ctx.data_dir} (head seq {head.seq})")


@cli.command()
@pass_context
def stats(ctx: Context) -> None:
    """Event count, head seq and size on disk."""
    with EventLog.open(ctx.log_dir) as log:
        head = log.head()
    size = sum(p.stat().st_size for p in ctx.data_dir.rglob("*") if p.is_file())
    data = {"events": head.seq, "head_seq": head.seq, "head_hash": head.hash,
            "bytes_on_disk": size}
    ctx.emit(data, lambda: "\n".join(f"{k:>14}: {v}" for k, v in data.items()))


@cli.group()
def audit() -> None:
    """Audit the log: verify the chain."""


@audit.command("verify")
@pass_context
def audit_verify(ctx: Context) -> None:
    """Walk the hash chain; exit 1 when any stored byte was changed."""
    with EventLog.open(ctx.log_dir) as log:
        result = log.verify()
    data = {"ok": result.ok, "events": result.events, "head": result.head,
            "first_bad_seq": result.first_bad_seq, "problem": result.problem}
    if result.ok:
        ctx.emit(data, f"ok: {result.events} events, chain verified to seq {result.head}")
    else:
        ctx.emit(data, f"FAILED at seq {result.first_bad_seq}: {result.problem}")
        sys.exit(1)


def _parse_until(value: str | None, log: EventLog) -> int | None:
    if value is None:
        return None
    if value.startswith("@"):
        try:
            seq = int(value[1:])
        except ValueError:
            raise InvalidInputError(f"invalid seq {value!r}: use @N, e.g. @120") from None
        if seq < 0:
            raise InvalidInputError("a seq cannot be negative")
        return seq
    return log.seq_at(parse_time(value))


@cli.command()
@click.option("--projection", "names", multiple=True, type=click.Choice(["views", "search"]),
              help="Projection to rebuild (search is rebuilt from the views, so both are).")
@click.option("--until", "until", default=None, help="Stop at a time (ISO 8601) or @SEQ.")
@pass_context
def replay(ctx: Context, names: tuple[str, ...], until: str | None) -> None:
    """Rebuild the projections from the log into a fresh directory and swap it in."""
    started = time.perf_counter()
    with EventLog.open(ctx.log_dir) as log:
        stop = _parse_until(until, log)
        total = log.head().seq if stop is None else min(stop, log.head().seq)
        proj = Projections(ctx.data_dir, log)
        try:
            with click.progressbar(length=max(total, 1), label="replaying", file=sys.stderr) as bar:
                last = [0]

                def progress(seq: int) -> None:
                    bar.update(seq - last[0])
                    last[0] = seq

                done = proj.replay(until=stop, progress=progress)
        finally:
            proj.close()
    seconds = time.perf_counter() - started
    data = {"events": done, "seconds": round(seconds, 3), "projections": ["views", "search"],
            "requested": list(names) or ["views", "search"]}
    ctx.emit(data, f"replayed {done} events into views and search in {seconds:.2f} s")


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="memlog")
