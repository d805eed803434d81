"""The ``memlog`` command line (DESIGN section 7), assembled.

Every command takes ``--dir`` (default ``./.memlog``, env ``MEMLOG_DIR``),
``--json`` and ``-v``. The commands live one module per concern and are
added here with ``add_command``; importing a module registers nothing.
"""

from __future__ import annotations

from pathlib import Path

import click

from . import (
    admin,
    agents,
    audit,
    entries,
    formation,
    health,
    integrate,
    lifecycle,
    maintain,
    privacy,
    read,
    resources,
    sessions,
    transfer,
    upkeep,
)
from .base import Context, MemlogGroup
from .demo import demo
from .logs import configure_logging

__all__ = ["cli", "main"]


@click.group(cls=MemlogGroup)
@click.option("--dir", "data_dir", type=click.Path(path_type=Path), envvar="MEMLOG_DIR",
              default=Path(".memlog"), show_default=True, help="Data directory.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option("-v", "--verbose", is_flag=True, help="Debug logs on stderr.")
@click.option("--read-only", is_flag=True, envvar="MEMLOG_READ_ONLY",
              help="Open the store read-only: every write fails with E_READ_ONLY and writes nothing.")
@click.option("--log", "log", envvar="MEMLOG_LOG_URL", default=None, metavar="URL",
              help="A shared event log, nats://host:port[,host:port]/<stream> (projections stay in --dir).")
@click.pass_context
def cli(ctx: click.Context, data_dir: Path, as_json: bool, verbose: bool, read_only: bool,
        log: str | None) -> None:
    """memlog: an event-sourced memory for AI agents that can audit and forget."""
    configure_logging(verbose)
    ctx.obj = Context(data_dir, as_json, read_only, log=log)


for _command in (
    admin.init, sessions.session, entries.add, entries.task, entries.remember, entries.forget,
    read.show, read.memories, read.search, read.context, read.stats,
    privacy.delete, privacy.redact, privacy.retention, privacy.purge,
    admin.replay, admin.decay, admin.config, audit.audit, health.health, health.metrics, demo,
    integrate.mcp, transfer.import_, transfer.export,
    lifecycle.compact, lifecycle.summarise,  # -- compaction and summaries --
    resources.resource,  # memory resources
    maintain.maintain,  # -- maintain --
    formation.extract,  # -- formation --
    upkeep.checkpoint, upkeep.recover,  # -- upkeep --
    agents.agents, agents.finding,
    entries.edit,
):
    cli.add_command(_command)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="memlog")
