#!/usr/bin/env python3
"""Evidence in the context block of a fresh session, on LoCoMo conversations.

Usage::

    python tools/bench/bench_context.py [--data ../shared/bench/locomo-dev.json] [--json]
                                  [--budget 1000] [--sample N] [--seed 0]
                                  [--conversations N] [--recall-share X] [--dir PATH]

The metric:

- for each conversation, two stores (``MemoryLog``): in each, one memlog session
  of one user per LoCoMo session, one message entry per turn as
  ``tools/bench/bench_recall.py`` records them (``Speaker: text``, the session's date);
  in the first store the sessions are left open, in the second each is closed
  (which writes its handoff and extracts its decisions and lessons);
- in each store a fresh session of the same user is started, and for each
  question the block is built with the question as the ``query`` and
  ``budget_tokens`` 1000 (nothing is written between questions, so each sees
  the same fresh session);
- a question's share is the part of its ``evidence`` turns the block carries:
  a turn is carried when the block's text holds the turn's first 50 characters
  (its whole text when shorter), whitespace flattened as the block prints it;
  questions without evidence are skipped; figures are averaged over the
  questions, overall and per category.

The anchor, measured in the same run on the open store: a block filled from
memlog's own search hits alone (``search`` of the question for the user, both
sources, limit 50), each hit's content on a line, best first, while the lines
fit the same budget by the same token count (characters / 4).

``--recall-share X`` sets the share of the budget kept for the recall section
(the setting ``context_shares``, a partial table over its defaults).
``--sample N`` measures a fixed subset: N questions drawn with ``--seed`` from
those with evidence (the whole set when N is 0 or more than there are).
Progress goes to stderr; the table (or with ``--json`` one JSON object) goes to
stdout.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from commands import MemoryLog, chars_over_four

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_recall import CATEGORIES, DEFAULT_DATA, evidence, sessions, turn_text
from benchkit import align, log, percentile, run_main

USER = "locomo-user"
PREFIX = 50  # the characters of a turn the block must hold for the turn to count


def flat(text: str) -> str:
    """Whitespace flattened, as the block prints an item."""
    return " ".join(text.split())


def ingest(mem: MemoryLog, sample: dict[str, Any], close: bool) -> dict[str, str]:
    """Record every turn in sessions of :data:`USER`, closing each if asked;
    returns {dia_id: the turn's text as the block would print it}."""
    conv = sample["conversation"]
    roles = {conv.get("speaker_a"): "user", conv.get("speaker_b"): "assistant"}
    texts: dict[str, str] = {}
    with mem.batch():
        for date, turns in sessions(conv):
            sid = mem.start_session(user_id=USER)
            for i, turn in enumerate(turns):
                mem.add_message(sid, role=roles.get(turn["speaker"], "user"), content=turn_text(turn),
                                occurred_at=int(date.timestamp() * 1_000_000) + i)
                texts[turn["dia_id"]] = flat(turn_text(turn))
    if close:
        for session in mem.sessions(USER):
            mem.close_session(session.id)
    mem.proj.catch_up(search=True)
    return texts


def carried(text: str, wanted: set[str], texts: dict[str, str]) -> float:
    """The share of the ``wanted`` turns whose first :data:`PREFIX` characters ``text`` holds."""
    return sum(1 for d in wanted if d in texts and texts[d][:PREFIX] in text) / len(wanted)


def search_block(mem: MemoryLog, question: str, budget: int) -> str:
    """The anchor: memlog's search hits alone, best first, while they fit ``budget``."""
    lines: list[str] = []
    for hit in mem.search(question, user_id=USER, source="both", limit=50, record_access=False):
        line = f"- {flat(hit.content)}"
        if chars_over_four("\n".join([*lines, line])) > budget:
            break
        lines.append(line)
    return "\n".join(lines)


def pick(data: list[dict[str, Any]], sample: int, seed: int) -> list[tuple[int, dict[str, Any]]]:
    """(conversation number, question) pairs: all with evidence, or a seeded sample of them."""
    found = [(n, q) for n, s in enumerate(data) for q in s["qa"] if evidence(q)]
    if 0 < sample < len(found):
        found = sorted(random.Random(seed).sample(found, sample), key=lambda t: t[0])
    return found


def run(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    data = json.loads(Path(args.data).read_text())[: args.conversations]
    chosen = pick(data, args.sample, args.seed)
    overrides: dict[str, Any] = {}
    if args.recall_share is not None:
        overrides["context_shares"] = {"recall": args.recall_share}
    rows: dict[str, list[tuple[int, float]]] = {"open": [], "closed": [], "search": []}
    latencies: list[float] = []
    tokens: dict[str, list[int]] = {"open": [], "closed": []}
    for n, sample in enumerate(data):
        questions = [q for m, q in chosen if m == n]
        if not questions:
            continue
        for case in ("open", "closed"):
            with MemoryLog.open(base / f"conv{n}-{case}", **overrides) as mem:
                texts = ingest(mem, sample, close=case == "closed")
                fresh = mem.start_session(user_id=USER)
                for q in questions:
                    wanted, category = evidence(q), int(q.get("category", 0))
                    started = time.perf_counter()
                    block = mem.context(fresh, query=q["question"], budget_tokens=args.budget)
                    latencies.append((time.perf_counter() - started) * 1000)
                    tokens[case].append(block.tokens)
                    rows[case].append((category, carried(block.text, wanted, texts)))
                    if case == "open":
                        anchor = search_block(mem, q["question"], args.budget)
                        rows["search"].append((category, carried(anchor, wanted, texts)))
        log(f"conversation {n + 1}/{len(data)}: {len(questions)} questions")
    return summarise(rows, tokens, latencies, args, len(chosen))


def _mean(values: Sequence[float]) -> float:
    return round(100 * sum(values) / len(values), 1) if values else 0.0


def summarise(rows: dict[str, list[tuple[int, float]]], tokens: dict[str, list[int]],
              latencies: list[float], args: argparse.Namespace, questions: int) -> dict[str, Any]:
    out: dict[str, Any] = {
        "evidence_open": _mean([v for _, v in rows["open"]]),
        "evidence_closed": _mean([v for _, v in rows["closed"]]),
        "evidence_search_only": _mean([v for _, v in rows["search"]]),
    }
    cats = sorted({c for c, _ in rows["open"]})
    out["by_category"] = {
        CATEGORIES.get(c, str(c)): {"questions": sum(1 for cc, _ in rows["open"] if cc == c),
                                    **{f"evidence_{k}": _mean([v for cc, v in rows[key] if cc == c])
                                       for k, key in (("open", "open"), ("closed", "closed"),
                                                      ("search_only", "search"))}}
        for c in cats}
    out["block_tokens_p50"] = {k: percentile(v, 50) if v else 0 for k, v in tokens.items()}
    out["context_p50_ms"] = round(percentile(latencies, 50), 3) if latencies else 0.0
    out |= {"questions": questions, "budget_tokens": args.budget, "sample": args.sample, "seed": args.seed,
            "recall_share": args.recall_share}
    return out


def table(r: dict[str, Any]) -> str:
    head = ["", "open", "closed", "search only"]
    body = [["evidence in the block (%)", f"{r['evidence_open']:.1f}", f"{r['evidence_closed']:.1f}",
             f"{r['evidence_search_only']:.1f}"]]
    body += [[f"  {name} ({c['questions']})", f"{c['evidence_open']:.1f}", f"{c['evidence_closed']:.1f}",
              f"{c['evidence_search_only']:.1f}"] for name, c in r["by_category"].items()]
    return "\n".join([f"context of a fresh session, {r['questions']} questions, "
                      f"budget {r['budget_tokens']} tokens", *align(head, body),
                      f"context p50 {r['context_p50_ms']:.2f} ms; block tokens p50 "
                      f"{r['block_tokens_p50']['open']} open, {r['block_tokens_p50']['closed']} closed"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--sample", type=int, default=0, help="a seeded sample of N questions (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--recall-share", type=float, default=None,
                        help="the budget share kept for the recall section (default: the setting's)")
    parser.add_argument("--dir", type=Path, default=None, help="scratch directory parent")
    return run_main(parser.parse_args(argv), run, table, "bench-context-")


if __name__ == "__main__":
    sys.exit(main())
