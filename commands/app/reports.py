"""Deletion audit reports: every request, what went, by whom, why, when, and the purge.

Reports hold ids, counts, criteria, reasons and times, never content. Formats:
text, Markdown, JSON and a self-contained HTML page.
"""

from __future__ import annotations

import html
from typing import Any

import msgspec

from eventstore import format_micros
from projections import DeletionRecord

__all__ = ["FORMATS", "deletion_rows", "render_deletions"]

FORMATS = ("text", "md", "json", "html")


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
    for r in rows:
        out.append(
            f"{r['request_id']}  {r['status']}\n"
            f"  requested {r['requested_at']} by {r['requested_by']}: {r['reason']}\n"
            f"  criteria: {r['criteria']}\n"
            f"  deleted: {_counts(r)} ({len(r['entry_ids'])} ids: {', '.join(r['entry_ids'][:10])}"
            f"{' ...' if len(r['entry_ids']) > 10 else ''}); erased seqs {r['erased_seqs'][:10]}\n"
            f"  purge: {r['purged_at'] or 'pending'} ({_verified(r)})"
        )
    return "\n".join(out)


def _markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["# Deletion audit report", "", f"{len(rows)} request(s).", "",
             "| request | requested | by | reason | deleted | ids | erased seqs | purged | verification |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| `{r['request_id']}` | {r['requested_at']} | {r['requested_by']} | {_md(r['reason'])} | "
            f"{_counts(r)} | {', '.join(r['entry_ids'])} | {', '.join(map(str, r['erased_seqs']))} | "
            f"{r['purged_at'] or 'pending'} | {_verified(r)} |")
    return "\n".join(lines)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


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


def _e(value: Any) -> str:
    return html.escape(str(value))
