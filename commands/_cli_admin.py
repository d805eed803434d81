"""CLI commands for the store itself: init, replay, decay, stats, audit, demo."""

from __future__ import annotations

import sys
import time

import click

from eventstore import EventLog, InvalidInputError, parse_time

from .cli import Context, cli, pass_context


@cli.command()
@pass_context
def init(ctx: Context) -> None:
    """Create the data directory and an empty store."""
    with ctx.memory() as mem:
        head = mem.log.head()
    ctx.emit({"dir": str(ctx.data_dir), "head_seq": head.seq},
             f"memlog store ready in {ctx.data_dir} (head seq {head.seq})")


def parse_point(value: str, log: EventLog) -> int:
    """A point in the log: ``@SEQ`` or an ISO 8601 time (mapped to the last seq at it)."""
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
    with ctx.memory() as mem:
        stop = None if until is None else parse_point(until, mem.log)
        total = mem.log.head().seq if stop is None else min(stop, mem.log.head().seq)
        with click.progressbar(length=max(total, 1), label="replaying", file=sys.stderr) as bar:
            last = [0]

            def progress(seq: int) -> None:
                bar.update(seq - last[0])
                last[0] = seq

            done = mem.proj.replay(until=stop, progress=progress)
    seconds = time.perf_counter() - started
    data = {"events": done, "seconds": round(seconds, 3), "projections": ["views", "search"],
            "requested": list(names) or ["views", "search"]}
    ctx.emit(data, f"replayed {done} events into views and search in {seconds:.2f} s")


@cli.command()
@click.option("--as-of", "as_of", help="When the parameters take effect (ISO 8601); default now.")
@click.option("--rate", "rates", multiple=True, help="KIND=RATE per hour, e.g. message=0.1.")
@click.option("--floor", type=click.FloatRange(0, 1), default=0.1, show_default=True)
@pass_context
def decay(ctx: Context, as_of: str | None, rates: tuple[str, ...], floor: float) -> None:
    """Emit decay.applied: the decay rates and floor in force from --as-of on."""
    parsed = {}
    for pair in rates:
        kind, sep, value = pair.partition("=")
        try:
            parsed[kind] = float(value) if sep else -1.0
        except ValueError:
            parsed[kind] = -1.0
        if parsed[kind] < 0:
            raise InvalidInputError(f"--rate takes KIND=RATE with a rate >= 0, got {pair!r}")
    with ctx.memory() as mem:
        seq = mem.apply_decay(as_of, rates=parsed, floor=floor)
    ctx.emit({"id": None, "seq": seq}, f"decay parameters recorded (seq {seq})")


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


@cli.command()
@click.option("--into", "into", type=click.Path(file_okay=False), default=None,
              help="Directory for the demo store (default: a fresh temporary one).")
@pass_context
def demo(ctx: Context, into: str | None) -> None:
    """Play a short multi-agent session, then search, build a context block and show stats."""
    from ._demo import run_demo

    run_demo(ctx, into)
