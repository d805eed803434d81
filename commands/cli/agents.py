"""CLI commands of agents and findings: ``memlog agents`` (seed 002's
``listAgents`` and ``getCategoryCounts``) and ``memlog finding update``
(seed 000)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from eventstore import FINDING_STATUSES

from .base import Context, pass_context
from .render import field, plain

if TYPE_CHECKING:
    from ..app.sessions.agents import AgentResult
    from ..memory import MemoryLog

__all__ = ["agents", "finding"]


def _text(found: list[AgentResult]) -> str:
    if not found:
        return "no agents"
    lines = []
    for agent in found:
        counts = ", ".join(f"{kind} {n}" for kind, n in agent.counts.items()) or "no entries"
        lines.append(f"{field(agent.agent_id)}: {counts}; {agent.sessions} sessions, "
                     f"last activity {agent.last_activity or '-'}")
    return "\n".join(lines)


@click.command()
@click.option("--user", "user_id", help="Only the agents of this user's sessions.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@pass_context
def agents(ctx: Context, user_id: str | None, as_json: bool) -> None:
    """List the agents, each with its entries counted by kind and its last activity."""
    ctx.json = ctx.json or as_json
    with ctx.reading() as mem:
        found = mem.agents(user_id)
    ctx.emit({"agents": [plain(a) for a in found]}, lambda: _text(found))


@click.group()
def finding() -> None:
    """Change findings."""


@finding.command("update")
@click.argument("finding_id")
@click.option("--status", required=True, type=click.Choice(FINDING_STATUSES), help="The new status.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@pass_context
def finding_update(ctx: Context, finding_id: str, status: str, as_json: bool) -> None:
    """Change a finding's status."""
    ctx.json = ctx.json or as_json

    def act(m: MemoryLog) -> str:
        m.update_finding(finding_id, status=status)
        return finding_id

    ctx.write(act, "updated finding")
