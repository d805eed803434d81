#!/usr/bin/env python3
"""Time memlog's redaction patterns on adversarial inputs, next to stdlib ``re``.

Usage::

    python tools/bench/bench_redaction.py [--size BYTES] [--re-timeout SECONDS] [--json]

Each adversarial input (default 1 MiB) is redacted with each built-in pattern
(email, api_key, password) the way ingest does it (``Redactor([kind]).redact``,
cheap pre-checks included: ``redact_s``), and scanned by the pattern on RE2
without the pre-checks (``scan_s``: the engine's own cost). As the anchor, the
seed's pattern runs on stdlib ``re`` on the same input in a child process
stopped after ``--re-timeout`` seconds (``re_s`` is null and ``re_timed_out``
true when it was stopped; ``--re-timeout 0`` skips the anchor). Two custom
regexes show the bounds on a user's regex: ``(a+)+$`` (catastrophic on a
backtracking engine) and ``[a-z]*x|[a-z]`` (many matches that each look to the
end of the text: memlog stops it at its time limit with E_INVALID_PATTERN).

Progress goes to stderr; the table (or with ``--json`` one JSON object:
``{"size", "rows": [{"input", "pattern", "bytes", "matches", "redact_s",
"scan_s", "refused", "re_s", "re_timed_out"}], "max_redact_s", "max_scan_s"}``)
goes to stdout.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import sys
import time
from collections.abc import Callable
from typing import Any

import re2

from commands.app.store.redaction import PATTERNS, Redactor
from eventstore import InvalidPatternError

# The seed's patterns, as stdlib re ran them before memlog moved to RE2.
SEED_PATTERNS = {
    "email": r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b",
    "api_key": r"\b(?:sk|pk|rk|ghp|gho|xox[abp])[-_][A-Za-z0-9_-]{16,}\b|\bAKIA[0-9A-Z]{16}\b"
               r"|\b[A-Za-z0-9]{32,}\b",
    "password": r"(?i)\b(?:password|passwd|pwd)\b\s*[:=]?\s*\S+",
}
CUSTOM = {"(a+)+$": r"(a+)+$", "many_lookahead": r"[a-z]*x|[a-z]"}


def _repeat(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def inputs(size: int) -> dict[str, str]:
    """The adversarial texts, each ``size`` characters (ASCII, so bytes too)."""
    r = _repeat
    return {
        "local_part_run": r("a.b_c%d+e-", size - 1) + "@",  # a long email local part, '@' only at the end
        "at_repeated": r("@", size),
        "a_at_repeated": r("a@", size),
        "domain_dots": "x@" + r("a.", size - 2),  # a domain that never ends in a TLD
        "dotted_words": r("a.", size - 1) + "@",
        "alnum_run": r("a", size),
        "alnum_run_underscore": r("a", size - 1) + "_",
        "token_dashes": "sk-" + r("-", size - 3),
        "sk_repeated": r("sk-", size),
        "password_repeated": r("password", size),
        "password_spaces": "password" + r(" ", size - 9) + "\n",
        "password_words": r("password ", size),
        "emails": r("a@b.cc ", size),
        "mixed_secrets": r("pwd= a@b.io sk-aaaaaaaaaaaaaaaaaaaa ", size),
    }


def _time(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def _re_child(pattern: str, text: str, conn: Any) -> None:
    start = time.perf_counter()
    count = sum(1 for _ in re.finditer(pattern, text))
    conn.send((time.perf_counter() - start, count))


def stdlib_seconds(pattern: str, text: str, timeout: float) -> float | None:
    """Seconds stdlib ``re`` takes to find every match, or None when stopped at ``timeout``."""
    if timeout <= 0:
        return None
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_re_child, args=(pattern, text, child), daemon=True)
    proc.start()
    try:
        if parent.poll(timeout):
            seconds: float = parent.recv()[0]
            return seconds
        return None
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()


def measure(name: str, kind: str, text: str, custom: str | None, re_timeout: float) -> dict[str, Any]:
    """One row: memlog's redaction and RE2 scan of ``text``, and stdlib re's anchor."""
    redactor = Redactor([], {kind: custom}) if custom else Redactor([kind])
    counts: dict[str, int] = {}
    refused = False
    try:
        redact_s, _ = _time(lambda: redactor.redact(text, counts))
    except InvalidPatternError:
        refused, redact_s = True, 0.0
    data = text.encode()
    engine = re2.compile(custom or PATTERNS[kind])
    scan_s = None
    if not refused:
        scan_s, _ = _time(lambda: sum(1 for _ in engine.finditer(data)))
    re_s = stdlib_seconds(custom or SEED_PATTERNS[kind], text, re_timeout)
    return {"input": name, "pattern": kind, "bytes": len(data), "matches": counts.get(kind, 0),
            "redact_s": round(redact_s, 4), "scan_s": None if scan_s is None else round(scan_s, 4),
            "refused": refused, "re_s": None if re_s is None else round(re_s, 4),
            "re_timed_out": re_timeout > 0 and re_s is None}


def run(size: int, re_timeout: float) -> dict[str, Any]:
    """Every adversarial input against every built-in pattern, then the custom regexes."""
    rows = []
    for name, text in inputs(size).items():
        for kind in PATTERNS:
            rows.append(measure(name, kind, text, None, re_timeout))
            print(f"  {name} {kind}: {rows[-1]['redact_s']} s", file=sys.stderr, flush=True)
    custom_inputs = {"(a+)+$": _repeat("a", size - 1) + "!", "many_lookahead": _repeat("abcdefghij", size)}
    for kind, regex in CUSTOM.items():
        rows.append(measure(f"custom_{kind}", kind, custom_inputs[kind], regex, re_timeout))
        print(f"  custom {kind}: {rows[-1]['redact_s']} s", file=sys.stderr, flush=True)
    builtin = [r for r in rows if r["pattern"] in PATTERNS]
    return {"size": size, "rows": rows, "max_redact_s": max(r["redact_s"] for r in builtin),
            "max_scan_s": max(r["scan_s"] for r in builtin)}


def _table(result: dict[str, Any]) -> str:
    lines = [f"{'input':24} {'pattern':15} {'matches':>8} {'redact s':>9} {'RE2 scan s':>10} "
             f"{'stdlib re s':>12}"]
    for r in result["rows"]:
        stdlib = "stopped" if r["re_timed_out"] else ("-" if r["re_s"] is None else f"{r['re_s']:.4f}")
        redact = "refused" if r["refused"] else f"{r['redact_s']:.4f}"
        scan = "-" if r["scan_s"] is None else f"{r['scan_s']:.4f}"
        lines.append(f"{r['input']:24} {r['pattern']:15} {r['matches']:>8} {redact:>9} {scan:>10} "
                     f"{stdlib:>12}")
    lines.append(f"max redact {result['max_redact_s']:.4f} s, max RE2 scan {result['max_scan_s']:.4f} s "
                 f"on {result['size']} bytes")
    return "\n".join(lines)


def main() -> None:
    """Parse arguments, run, print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1 << 20, help="bytes per input (default 1 MiB)")
    parser.add_argument("--re-timeout", type=float, default=10.0,
                        help="stop stdlib re after this many seconds per input (0: skip it)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    result = run(max(args.size, 64), args.re_timeout)
    print(json.dumps(result) if args.json else _table(result))


if __name__ == "__main__":
    main()
