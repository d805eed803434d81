"""CLI commands of memory resources: declare, list, append, read, length,
trim, replace, expire and delete (see docs/lifecycle.md (Memory resources))."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from eventstore import ROLES, InvalidInputError, shown

from .base import Context, pass_context, stdin_value
from .privacy import _confirm as confirm
from .privacy import _report as print_report
from .render import block, field, plain

if TYPE_CHECKING:
    from ..app.upkeep.resources import ResourceHandle
    from ..memory import MemoryLog

__all__ = ["resource"]

Command = Callable[..., Any]


def _key_options(fn: Command) -> Command:
    """The resource id and the ids that fill its key template."""
    for option in reversed([
        click.argument("resource_id"),
        click.option("--user", "user_id", help="Fills {user_id}."),
        click.option("--session", "session_id", help="Fills {session_id}."),
        click.option("--agent", "agent_id", help="Fills {agent_id}."),
    ]):
        fn = option(fn)
    return fn


def _handle(mem: MemoryLog, resource_id: str, user_id: str | None, session_id: str | None,
            agent_id: str | None) -> ResourceHandle:
    return mem.resource(resource_id, user_id=user_id, session_id=session_id, agent_id=agent_id)


_BLOCK_FORM = "--block takes NAME[:PRIORITY[:RATIO[:MAX_TOKENS]]], got "


def parse_block(text: str) -> dict[str, Any]:
    """``NAME[:PRIORITY[:RATIO[:MAX_TOKENS]]]`` as a block mapping (empty parts skipped)."""
    parts = text.split(":")
    if len(parts) > 4 or not parts[0]:
        raise InvalidInputError(_BLOCK_FORM + shown(text))
    out: dict[str, Any] = {"name": parts[0]}
    try:
        for name, kind, raw in zip(("priority", "ratio", "max_tokens"), (int, float, int), parts[1:],
                                   strict=False):
            if raw:
                out[name] = kind(raw)
    except ValueError:
        raise InvalidInputError(_BLOCK_FORM + shown(text)) from None
    return out


@click.group()
def resource() -> None:
    """Token-managed memory resources: declare, append, read, trim, replace."""


@resource.command("declare")
@click.argument("resource_id")
@click.option("--key", "key", required=True, help="Key template: {user_id}, {session_id}, {agent_id}.")
@click.option("--limit", "token_limit", type=int, required=True, help="Token limit.")
@click.option("--block", "blocks", multiple=True, help="NAME[:PRIORITY[:RATIO[:MAX_TOKENS]]]")
@click.option("--default-block")
@click.option("--flush-threshold", type=float, default=0.8, show_default=True)
@click.option("--flush-fraction", type=float, default=0.3, show_default=True)
@click.option("--ttl", "ttl_seconds", type=int, help="Seconds an item stays.")
@click.option("--context-ratio", type=float, default=0.3, show_default=True)
@click.option("--shared", is_flag=True,
              help="A key naming neither {user_id} nor {session_id}: show it in every user's context.")
@pass_context
def resource_declare(ctx: Context, resource_id: str, key: str, token_limit: int, blocks: tuple[str, ...],
                     default_block: str | None, flush_threshold: float, flush_fraction: float,
                     ttl_seconds: int | None, context_ratio: float, shared: bool) -> None:
    """Declare (or declare again) a resource."""
    spec = {"id": resource_id, "key": key, "token_limit": token_limit,
            "blocks": [parse_block(b) for b in blocks], "default_block": default_block,
            "flush_threshold": flush_threshold, "flush_fraction": flush_fraction,
            "ttl_seconds": ttl_seconds, "context_ratio": context_ratio, "shared": shared}
    ctx.write(lambda m: m.declare_resource(spec).id, "declared resource")


@resource.command("list")
@pass_context
def resource_list(ctx: Context) -> None:
    """List the resources in force (config.toml's and the declared ones)."""
    with ctx.reading() as mem:
        found = mem.resources()
    ctx.emit(plain(found), lambda: "\n".join(
        f"{field(s.id)}  key={field(s.key)}  limit={s.token_limit}  "
        f"blocks={','.join(field(b.name) for b in s.blocks) or 'default'}" for s in found) or "no resources")


@resource.command("append")
@_key_options
@click.option("--content", required=True, callback=stdin_value, help="The text ('-' reads stdin).")
@click.option("--role", type=click.Choice(ROLES), default="user", show_default=True)
@click.option("--block", "block_name")
@pass_context
def resource_append(ctx: Context, resource_id: str, user_id: str | None, session_id: str | None,
                    agent_id: str | None, content: str, role: str, block_name: str | None) -> None:
    """Append an item (then flush and evict as the resource says)."""
    ctx.write(lambda m: _handle(m, resource_id, user_id, session_id, agent_id).append(
        content, role=role, block=block_name), "appended")


@resource.command("read")
@_key_options
@click.option("--block", "block_name")
@pass_context
def resource_read(ctx: Context, resource_id: str, user_id: str | None, session_id: str | None,
                  agent_id: str | None, block_name: str | None) -> None:
    """The items in order, oldest first."""
    with ctx.reading() as mem:
        found = _handle(mem, resource_id, user_id, session_id, agent_id).read(block=block_name)
    ctx.emit([m.to_dict() for m in found], lambda: "\n".join(
        f"{field(m.id)}  [{field(m.block)}] {field(m.role or m.kind)}: {block(m.content, '    ')}"
        for m in found) or "no items")


@resource.command("length")
@_key_options
@pass_context
def resource_length(ctx: Context, resource_id: str, user_id: str | None, session_id: str | None,
                    agent_id: str | None) -> None:
    """How many items, and their tokens."""
    with ctx.reading() as mem:
        items = _handle(mem, resource_id, user_id, session_id, agent_id).read()
    data = {"items": len(items), "tokens": sum(m.tokens for m in items)}
    ctx.emit(data, f"{data['items']} items, {data['tokens']} tokens")


@resource.command("trim")
@_key_options
@click.option("--items", "items", type=int)
@click.option("--tokens", "tokens", type=int)
@pass_context
def resource_trim(ctx: Context, resource_id: str, user_id: str | None, session_id: str | None,
                  agent_id: str | None, items: int | None, tokens: int | None) -> None:
    """Keep only the newest N items, or the newest items within N tokens."""
    _removing(ctx, lambda m: _handle(m, resource_id, user_id, session_id, agent_id).trim(
        items=items, tokens=tokens), "trimmed")


@resource.command("replace")
@_key_options
@click.option("--content", "contents", multiple=True, required=True, help="One new item (repeat).")
@click.option("--role", type=click.Choice(ROLES), default="user", show_default=True)
@click.option("--block", "block_name")
@pass_context
def resource_replace(ctx: Context, resource_id: str, user_id: str | None, session_id: str | None,
                     agent_id: str | None, contents: tuple[str, ...], role: str,
                     block_name: str | None) -> None:
    """Replace every item by the given ones."""
    new = [{"content": c, "role": role, "block": block_name} for c in contents]
    with ctx.memory() as mem:
        ids = _handle(mem, resource_id, user_id, session_id, agent_id).replace(new)
        seq = mem.last_seq
    ctx.emit({"ids": ids, "seq": seq}, f"replaced with {len(ids)} items (seq {seq})")


@resource.command("expire")
@_key_options
@pass_context
def resource_expire(ctx: Context, resource_id: str, user_id: str | None, session_id: str | None,
                    agent_id: str | None) -> None:
    """Evict the items past the resource's TTL now."""
    _removing(ctx, lambda m: _handle(m, resource_id, user_id, session_id, agent_id).expire(), "expired")


def _removing(ctx: Context, action: Callable[[MemoryLog], int], label: str) -> None:
    """Run a write that removes items; print how many and the seq."""
    with ctx.memory() as mem:
        removed = action(mem)
        seq = mem.last_seq
    ctx.emit({"removed": removed, "seq": seq}, f"{label} {removed} items (seq {seq})")


@resource.command("delete")
@_key_options
@click.option("--reason", required=True)
@click.option("--requested-by", required=True)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@pass_context
def resource_delete(ctx: Context, resource_id: str, user_id: str | None, session_id: str | None,
                    agent_id: str | None, reason: str, requested_by: str, yes: bool) -> None:
    """Erase everything the resource ever held (items, evicted items, summaries), purge included."""
    confirm(yes, "Delete this resource's items for good? This cannot be undone.")
    with ctx.memory() as mem:
        report = _handle(mem, resource_id, user_id, session_id, agent_id).delete(
            reason=reason, requested_by=requested_by)
    print_report(ctx, report, "deletion")
