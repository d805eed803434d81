"""CLI commands for the store itself: init, replay, decay."""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any

import click
import msgspec

from eventstore import ENTRY_KINDS, InvalidInputError, ReadOnlyError

from .base import Context, LazyChoice, pass_context

__all__ = ["config", "decay", "init", "replay"]


def _projections() -> tuple[str, ...]:
    from ..app.ops.admin import PROJECTIONS
    return tuple(PROJECTIONS)


@click.command()
@pass_context
def init(ctx: Context) -> None:
    """Create the data directory and an empty store."""
    if ctx.read_only:
        raise ReadOnlyError("--read-only: init creates a store; nothing was written")
    with ctx.memory() as mem:
        head = mem.log.head()
    ctx.emit({"dir": str(ctx.data_dir), "head_seq": head.seq},
             f"memlog store ready in {ctx.data_dir} (head seq {head.seq})")


@click.command()
@click.option("--projection", "names", multiple=True, type=LazyChoice(_projections),
              help="Rebuild only this projection: search or vectors alone are rebuilt from the "
                   "views; views go with search and vectors. Default: all.")
@pass_context
def replay(ctx: Context, names: tuple[str, ...]) -> None:
    """Rebuild projections from the log (all into a fresh directory swapped in whole)."""
    from ..app.ops.admin import PROJECTIONS
    chosen = tuple(dict.fromkeys(names)) or PROJECTIONS
    started = time.perf_counter()
    with ctx.reading() as mem, contextlib.ExitStack() as stack:
        total = mem.log.head().seq
        bars: list[Any] = []  # the bar starts with the work (a refused choice prints only its error)
        last = [0]

        def progress(seq: int) -> None:
            if not bars:
                bars.append(stack.enter_context(
                    click.progressbar(length=max(total, 1), label="replaying", file=sys.stderr)))
            bars[0].update(max(0, seq - last[0]))
            last[0] = max(last[0], seq)

        done = mem.replay(chosen, progress=progress)
    seconds = time.perf_counter() - started
    data = {"events": done, "seconds": round(seconds, 3), "projections": list(chosen)}
    ctx.emit(data, f"replayed {done} events into {' and '.join(chosen)} in {seconds:.2f} s")


def _parse_rates(pairs: tuple[str, ...]) -> dict[str, float]:
    parsed: dict[str, float] = {}
    for pair in pairs:
        kind, sep, value = pair.partition("=")
        try:
            rate = float(value) if sep else -1.0
        except ValueError:
            rate = -1.0
        if rate < 0 or kind not in ENTRY_KINDS:
            raise InvalidInputError(f"--rate takes KIND=RATE with a kind of {', '.join(ENTRY_KINDS)} "
                                    f"and a rate >= 0, got {pair!r}")
        parsed[kind] = rate
    return parsed


@click.command()
@click.option("--as-of", "as_of", help="When the parameters take effect (ISO 8601); default now.")
@click.option("--rate", "rates", multiple=True, help="KIND=RATE per hour, e.g. message=0.1; "
                                                     "the other rates stay.")
@click.option("--floor", type=click.FloatRange(0, 1), default=None, help="The floor; default: unchanged.")
@click.option("--show", is_flag=True, help="Print the parameters in force; change nothing.")
@pass_context
def decay(ctx: Context, as_of: str | None, rates: tuple[str, ...], floor: float | None, show: bool) -> None:
    """Emit decay.applied: change the given rates (and floor) from --as-of on; --show prints them."""
    if show:
        from ..app.ops.admin import params_dict
        if rates or floor is not None or as_of is not None:
            raise InvalidInputError("--show changes nothing: give it alone")
        with ctx.reading() as mem:
            params = params_dict(mem.decay_params())
        ctx.emit(params, lambda: "\n".join(
            [f"floor: {params['floor']}", f"access boost: {params['access_boost']}",
             f"importance boost: {params['importance_boost']}", "rates per hour:"]
            + [f"  {k}: {v}" for k, v in sorted(params["rates"].items())]))
        return
    parsed = _parse_rates(rates)
    with ctx.memory() as mem:
        seq = mem.apply_decay(as_of, rates=parsed, floor=floor)
    ctx.emit({"id": None, "seq": seq}, f"decay parameters recorded (seq {seq})")


@click.group()
def config() -> None:
    """The settings in force: defaults, config.toml, MEMLOG_* variables."""


@config.command("show")
@pass_context
def config_show(ctx: Context) -> None:
    """Print every setting in force for --dir (config.toml's partial tables
    merged with the defaults); an unknown setting is an error naming it."""
    from ..app import load_settings
    from ..app.store.settings import policy
    ctx.check_dir(write=False)
    data = policy(load_settings(ctx.data_dir))

    def text() -> str:
        lines = []
        for name, value in data.items():
            if isinstance(value, dict):
                lines.append(f"{name}:")
                lines += [f"  {k} = {msgspec.json.encode(v).decode()}" for k, v in value.items()]
            else:
                lines.append(f"{name} = {msgspec.json.encode(value).decode()}")
        return "\n".join(lines)

    ctx.emit(data, text)
