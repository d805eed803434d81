"""Deletion audit reports: every request, what went, by whom, why, when, and the purge.

Reports hold ids, counts, criteria, reasons and times, never content. Formats:
text, Markdown, JSON and a self-contained HTML page. Every field is escaped for
its format: control characters and bidi overrides are shown as escapes
(:func:`escape_controls`) in text, Markdown and HTML; Markdown escapes its
punctuation and turns newlines into spaces; HTML escapes ``& < > " '``. JSON is
exact.
"""

from __future__ import annotations

import html
from typing import Any

import msgspec

from eventstore import format_micros
from projections import DeletionRecord

__all__ = ["FORMATS", "deletion_rows", "escape_controls", "escape_html", "escape_md", "render_deletions"]

FORMATS = ("text", "md", "json", "html")

# C0 (but what ``keep`` names), DEL, C1 and the bidi embeddings, overrides and isolates.
_CONTROLS = [*range(0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_ESCAPES = {cp: f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" for cp in _CONTROLS}
_KEEP_TABLES: dict[str, dict[int, str]] = {}
_MD_SPECIAL = "\\`*_[]<>|~&"
_MD_TABLE = {ord(c): "\\" + c for c in _MD_SPECIAL}


def escape_controls(text: str, keep: str = "") -> str:
    """``text`` with control characters (C0, DEL, C1) and Unicode bidi
    overrides shown as ``\\xNN`` / ``\\uNNNN``, except the characters in ``keep``
    (``"\\n\\t"`` for a block whose layout needs them)."""
    if text.isprintable():
        return text
    table = _KEEP_TABLES.get(keep)
    if table is None:
        table = {cp: e for cp, e in _ESCAPES.items() if chr(cp) not in keep}
        _KEEP_TABLES[keep] = table
    return text.translate(table)


def escape_md(value: Any) -> str:
    """A Markdown table cell: one line, controls escaped, punctuation backslash-escaped."""
    flat = " ".join(str(value).replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    return escape_controls(flat).translate(_MD_TABLE)


def escape_html(value: Any) -> str:
    """HTML text or attribute: controls escaped, then ``& < > " '``."""
    return html.escape(escape_controls(str(value)), quote=True)


def _when(micros: int | None) -> str | None:
    return None if micros is None else format_micros(micros)


def deletion_rows(records: list[DeletionRecord], since: int | None = None,
                  until: int | None = None) -> list[dict[str, Any]]:
    """The ledger as plain rows, filtered by request time."""
    rows = []
    for d in records:
        if (since is not None and d.requested_at < since) or (until is not None and d.requested_at > until):
            continue
        status = "purged" if d.purge_seq is not None else ("pending purge" if d.deleted_seq else "requested")
        rows.append({
            "request_id": d.request_id, "requested_by": d.requested_by, "reason": d.reason,
            "criteria": msgspec.to_builtins(d.criteria), "requested_at": _when(d.requested_at),
            "requested_seq": d.requested_seq, "counts_by_kind": dict(d.counts_by_kind),
            "entry_ids": list(d.entry_ids), "erased_seqs": list(d.erased_seqs),
            "deleted_at": _when(d.deleted_at), "purged_at": _when(d.purged_at),
            "purge_verified": d.purge_verified, "files_rewritten": list(d.files_rewritten),
            "status": status,
        })
    return rows


def render_deletions(rows: list[dict[str, Any]], fmt: str) -> str:
    """Render rows as text, md, json or html."""
    if fmt == "json":
        return msgspec.json.encode({"deletions": rows, "count": len(rows)}).decode()
    if fmt == "md":
        return _markdown(rows)
    if fmt == "html":
        return _html(rows)
    return _text(rows)


def _counts(row: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(row["counts_by_kind"].items())) or "none"


def _verified(row: dict[str, Any]) -> str:
    if row["purge_verified"] is None:
        return "not yet"
    return "verified" if row["purge_verified"] else "FAILED"


def _text(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no deletion requests"
    out = []
    e = escape_controls
    for r in rows:
        out.append(
            f"{e(r['request_id'])}  {r['status']}\n"
            f"  requested {r['requested_at']} by {e(r['requested_by'])}: {e(r['reason'])}\n"
            f"  criteria: {e(str(r['criteria']))}\n"
            f"  deleted: {e(_counts(r))} ({len(r['entry_ids'])} ids: {e(', '.join(r['entry_ids'][:10]))}"
            f"{' ...' if len(r['entry_ids']) > 10 else ''}); erased seqs {r['erased_seqs'][:10]}\n"
            f"  purge: {r['purged_at'] or 'pending'} ({_verified(r)})"
        )
    return "\n".join(out)


def _markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["# Deletion audit report", "", f"{len(rows)} request(s).", "",
             "| request | requested | by | reason | deleted | ids | erased seqs | purged | verification |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = (r["request_id"], r["requested_at"], r["requested_by"], r["reason"], _counts(r),
                 ", ".join(r["entry_ids"]), ", ".join(map(str, r["erased_seqs"])),
                 r["purged_at"] or "pending", _verified(r))
        lines.append("| " + " | ".join(escape_md(c) for c in cells) + " |")
    return "\n".join(lines)


_STYLE = """body{font:15px/1.5 system-ui,sans-serif;margin:2rem;color:#222}
table{border-collapse:collapse;width:100%}th,td{border:1px solid #ccc;padding:.4rem .6rem;
text-align:left;vertical-align:top}th{background:#f3f3f3}code{font-size:13px}
.ok{color:#1a7f37;font-weight:600}.bad{color:#b42318;font-weight:600}.pending{color:#9a6700}"""


def _html(rows: list[dict[str, Any]]) -> str:
    body = []
    for r in rows:
        css = {"verified": "ok", "FAILED": "bad"}.get(_verified(r), "pending")
        cells = [f"<code>{_e(r['request_id'])}</code>", _e(r["requested_at"]), _e(r["requested_by"]),
                 _e(r["reason"]), f"<code>{_e(r['criteria'])}</code>", _e(_counts(r)),
                 "<br>".join(f"<code>{_e(i)}</code>" for i in r["entry_ids"]),
                 _e(", ".join(map(str, r["erased_seqs"]))), _e(r["purged_at"] or "pending"),
                 f'<span class="{css}">{_e(_verified(r))}</span>']
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("Request", "Requested", "By", "Reason", "Criteria",
                                              "Deleted", "Ids", "Erased seqs", "Purged", "Verification"))
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>memlog deletion audit"
            f"</title><style>{_STYLE}</style></head><body><h1>Deletion audit report</h1>"
            f"<p>{len(rows)} request(s). Content is never shown, only ids, counts and reasons.</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
            f"</body></html>")


_e = escape_html
