"""``memlog demo``: a realistic multi-agent session on a fresh store."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import msgspec

from eventstore import InvalidInputError

from .base import Context, pass_context

if TYPE_CHECKING:
    from ..memory import MemoryLog

__all__ = ["demo"]


@click.command()
@click.option("--into", "into", type=click.Path(file_okay=False), default=None,
              help="Directory for the demo store (default: a fresh temporary one).")
@pass_context
def demo(ctx: Context, into: str | None) -> None:
    """Play a short multi-agent session, then search, build a context block and show stats."""
    target = Path(into) if into else Path(tempfile.mkdtemp(prefix="memlog-demo-")) / "store"
    if target.exists() and any(target.iterdir()):
        raise InvalidInputError(f"{target} is not empty; the demo needs a fresh directory")
    say = (lambda *_: None) if ctx.json else click.echo
    say(f"memlog demo: a fresh store in {target}\n")
    from ..app import load_settings
    from ..memory import MemoryLog
    with MemoryLog.open(target, load_settings(target)) as mem:
        ids = _record(mem, say)
        hits = mem.search("database connection pool", limit=3)
        say("\n$ memlog search 'database connection pool' --limit 3")
        for h in hits:
            say(f"  {h.score:.3f}  {h.type:<9} {h.snippet}")
        block = mem.context(ids["session"], query="database", budget_tokens=400)
        say(f"\n$ memlog context {ids['session']} --query database --budget 400")
        say("  " + block.text.replace("\n", "\n  "))
        say(f"  ({block.tokens} of {block.budget} tokens; "
            + ", ".join(f"{s.name} {s.tokens}" for s in block.sections) + ")")
        stats = mem.stats()
        email = mem.show(ids["message"])
        verified = mem.verify()
    say("\n$ memlog stats")
    say(f"  {stats['events']} events, {stats['entries']} entries: "
        + ", ".join(f"{k} {v}" for k, v in sorted(stats["by_kind"].items())))
    say(f"  chain verified: {verified.ok} ({verified.events} events)")
    say(f"\nTry it yourself: memlog --dir {target} search postgres")
    if ctx.json:
        ctx.emit({"dir": str(target), "ids": ids, "search": msgspec.to_builtins(hits),
                  "context": block.to_dict(), "stats": stats, "redacted_message": email.content,
                  "verified": verified.ok}, "")


def _record(mem: MemoryLog, say: Any) -> dict[str, str]:
    sid = mem.start_session(user_id="alice", agent_ids=["architect", "analyst", "developer"],
                            tags=["payments", "architecture"], metadata={"project": "payment-system"})
    say(f"session {sid} started for alice with architect, analyst and developer")
    mem.set_project_context(sid, content="Payment system: Python services, PostgreSQL ledger, "
                                         "Kafka events, deployed on Kubernetes.")
    msg = mem.add_message(sid, role="user", agent_id="architect",
                          content="We must reach 10k TPS on the ledger. Send the plan to "
                                  "alice@example.com when ready.")
    say(f"  user message {msg}: its email address is redacted before it reaches disk")
    mem.add_message(sid, role="assistant", agent_id="architect",
                    content="I recommend PostgreSQL for ACID compliance and proven scalability.")
    dec = mem.record_decision(sid, decision="Use PostgreSQL for the primary ledger database",
                              rationale="ACID compliance for financial transactions; 10k TPS proven",
                              alternatives=["MongoDB: eventual consistency risk"], impact="high",
                              made_by="architect", approved_by=["alice"], tags=["database"])
    say(f"  decision {dec} by architect (impact high)")
    fnd = mem.record_finding(sid, description="Database connection pooling is not configured",
                             severity="high", category="scalability", agent_id="analyst",
                             evidence="pool settings missing from application.yml",
                             recommendation="Use a pool with at most 50 connections")
    say(f"  finding {fnd} by analyst (severity high)")
    les = mem.record_lesson(sid, content="Load-test the connection pool before every launch",
                            agent_id="developer")
    say(f"  lesson {les} by developer")
    task = mem.add_task(sid, content="Configure connection pooling")
    mem.add_task(sid, content="Write the failover runbook")
    mem.complete_task(task)
    say("  two tasks, one done")
    mem.set_preference("alice", key="response_style", value="concise, with code examples",
                       category="communication", confidence=0.9)
    mem.remember("alice", "favourite_db", "PostgreSQL")
    say("  alice prefers concise answers; memlog remembers her favourite_db")
    hnd = mem.record_handoff(sid, content="Ledger database chosen (PostgreSQL). Next: pooling, "
                                          "failover runbook.", agent_id="architect")
    say(f"  handoff {hnd} for the next session")
    return {"session": sid, "message": msg, "decision": dec, "finding": fnd, "lesson": les,
            "handoff": hnd}
