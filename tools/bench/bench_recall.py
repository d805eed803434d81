#!/usr/bin/env python3
"""Recall of memlog's search on LoCoMo conversations (the recall issue's metric).

Usage::

    python tools/bench/bench_recall.py [--data ../shared/bench/locomo-dev.json] [--json]
                                 [--mode text|semantic|hybrid] [--conversations N]
                                 [--questions N] [--dir PATH]

The metric:

- one store per conversation (``MemoryLog``), one memlog session per LoCoMo
  session, and one message entry per turn whose content is ``Speaker: text``,
  plus `` [shares CAPTION]`` when the turn has a ``blip_caption``; the entry's
  ``occurred_at`` is its session's date (a microsecond per turn keeps order);
- each question is searched in its own conversation's store (``limit`` 50);
- recall@k is the share of the question's ``evidence`` dia_ids found among the
  top k results (an evidence string naming several ids, ``"D8:6; D9:17"``,
  counts as those ids); questions without evidence are skipped;
- figures are averaged over the questions, overall and per category
  (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial).

The no-match set (``tools/bench/no_match.py``): 200 queries made with a fixed seed,
random identifiers and questions on topics the conversations never touch,
each searched (limit 10) in every conversation's store in each mode;
``false_hit_rate`` is the share of those searches, in the run's mode, that
return any hit (``false_hit_rate_by_mode`` and ``false_hit_rate_by_kind``
beside it, in %).

Beside memlog, in the same process: raw Tantivy BM25 (one in-memory index per
conversation, one document per turn with the same text, the query an OR of the
question's words) and the LoCoMo paper's DRAGON figures as constants. The
query latency is the wall time of each search call (p50/p99); the ingest rate
is turns per second from the first write to a caught-up search index.

Progress goes to stderr; the table (or with ``--json`` one JSON object) goes to
stdout. The data file's README says where the conversations come from.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import tantivy

from commands import MemoryLog
from commands.app.recall import search as search_uc
from projections import tokens
from projections.search.terms import content_terms

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchkit import align, log, percentile, run_main
from no_match import no_match_queries

KS = (5, 10, 25, 50)
DRAGON = {5: 56.7, 10: 66.2, 25: 76.7, 50: 82.7}
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "bench" / "locomo-dev.json"
_SESSION = re.compile(r"^session_(\d+)$")
_EVIDENCE = re.compile(r"[;,\s]+")


# -- the data ------------------------------------------------------------------------

def turn_text(turn: dict[str, Any]) -> str:
    """``Speaker: text``, plus `` [shares CAPTION]`` for a shared image."""
    text = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    return f"{text} [shares {caption}]" if caption else text


def session_date(text: str) -> datetime:
    """LoCoMo's ``1:56 pm on 8 May, 2023`` as an aware datetime (UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def sessions(conversation: dict[str, Any]) -> list[tuple[datetime, list[dict[str, Any]]]]:
    """The conversation's sessions in order: (date, turns)."""
    numbers = sorted(int(m.group(1)) for key in conversation if (m := _SESSION.match(key)))
    return [(session_date(conversation[f"session_{n}_date_time"]), conversation[f"session_{n}"])
            for n in numbers if conversation.get(f"session_{n}")]


def evidence(question: dict[str, Any]) -> set[str]:
    """The question's evidence dia_ids."""
    return {part for item in question.get("evidence") or () for part in _EVIDENCE.split(item) if part}


def recall(found: Sequence[str], wanted: set[str]) -> dict[int, float]:
    """Recall at each k of :data:`KS`."""
    return {k: len(wanted & set(found[:k])) / len(wanted) for k in KS}


# -- the two retrievers ----------------------------------------------------------------

def ingest(mem: MemoryLog, sample: dict[str, Any]) -> tuple[dict[str, str], int]:
    """Record every turn; returns {entry id: dia_id} and the number of turns."""
    conv = sample["conversation"]
    roles = {conv.get("speaker_a"): "user", conv.get("speaker_b"): "assistant"}
    dia: dict[str, str] = {}
    with mem.batch():
        for date, turns in sessions(conv):
            sid = mem.start_session()
            for i, turn in enumerate(turns):
                eid = mem.add_message(sid, role=roles.get(turn["speaker"], "user"), content=turn_text(turn),
                                      occurred_at=int(date.timestamp() * 1_000_000) + i)
                dia[eid] = turn["dia_id"]
    mem.proj.catch_up(search=True)
    return dia, len(dia)


class RawBM25:
    """Plain Tantivy BM25 over the same turns: an in-memory index, an OR of the question's words."""

    def __init__(self, sample: dict[str, Any]) -> None:
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("content", stored=False)
        sb.add_unsigned_field("n", stored=False, fast=True)
        self.schema = sb.build()
        self.index = tantivy.Index(self.schema)
        self.dia: list[str] = []
        writer = self.index.writer(32 << 20, 1)
        for _, turns in sessions(sample["conversation"]):
            for turn in turns:
                writer.add_json(json.dumps({"content": turn_text(turn), "n": len(self.dia)}))
                self.dia.append(turn["dia_id"])
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()

    def search(self, text: str, limit: int) -> list[str]:
        words = list(dict.fromkeys(tokens(text)))
        if not words:
            return []
        q = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self.schema, "content", w)) for w in words])
        hits = self.searcher.search(q, limit, count=False).hits
        rows = self.searcher.fast_field_values("n", [addr for _, addr in hits])
        return [self.dia[int(cast("int", r))] for r in rows]


def memlog_search(mem: MemoryLog, text: str, mode: str | None) -> list[str]:
    """Entry ids of memlog's top 50, through the facade (or the same use case with a mode)."""
    if mode is None:
        return [r.id for r in mem.search(text, limit=max(KS))]
    query = search_uc.make_query(text, limit=max(KS), mode=mode)
    return [r.id for r in search_uc.search(mem.store, query)]


def all_texts(data: list[dict[str, Any]]) -> list[str]:
    """Every turn's text, of every conversation."""
    return [turn_text(t) for sample in data for _, turns in sessions(sample["conversation"]) for t in turns]


def false_hits(mem: MemoryLog, queries: list[tuple[str, str]], modes: Sequence[str | None],
               ) -> dict[tuple[str, str], int]:
    """(mode, kind) -> how many of ``queries`` return any hit in ``mem`` (limit 10)."""
    out: dict[tuple[str, str], int] = {}
    for mode in modes:
        for kind, text in queries:
            query = search_uc.make_query(text, limit=10, mode=mode)
            hit = bool(search_uc.find(mem.store, query))
            key = (mode or "default", kind)
            out[key] = out.get(key, 0) + hit
    return out


def false_hit_rates(counts: dict[tuple[str, str], int], queries: list[tuple[str, str]], stores: int,
                    mode: str | None) -> dict[str, Any]:
    """The false-hit rates in % of searches: in the run's mode, by mode and by kind."""
    kinds = {k: sum(1 for kk, _ in queries if kk == k) * stores for k, _ in queries}
    modes = sorted({m for m, _ in counts})
    by_mode = {m: round(100 * sum(v for (mm, _), v in counts.items() if mm == m) / (len(queries) * stores), 2)
               for m in modes}
    run_mode = mode or "default"
    return {"false_hit_rate": by_mode.get(run_mode, 0.0), "false_hit_rate_by_mode": by_mode,
            "false_hit_rate_by_kind": {k: round(100 * counts.get((run_mode, k), 0) / n, 2)
                                       for k, n in kinds.items()},
            "no_match_queries": len(queries), "no_match_searches": len(queries) * stores}


# -- the run ---------------------------------------------------------------------------

def run(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    data = json.loads(Path(args.data).read_text())[: args.conversations]
    no_match = no_match_queries(all_texts(data), content_terms)
    modes = [args.mode, *(m for m in ("text", "semantic", "hybrid") if m != args.mode)]
    counts: dict[tuple[str, str], int] = {}
    mine: list[tuple[int, dict[int, float]]] = []
    raw: list[dict[int, float]] = []
    latencies: list[float] = []
    raw_latencies: list[float] = []
    turns_total, ingest_s = 0, 0.0
    for n, sample in enumerate(data):
        questions = [q for q in sample["qa"] if evidence(q)][: args.questions]
        with MemoryLog.open(base / f"conv{n}") as mem:
            started = time.perf_counter()
            dia, turns = ingest(mem, sample)
            ingest_s += time.perf_counter() - started
            turns_total += turns
            bm25 = RawBM25(sample)
            for q in questions:
                started = time.perf_counter()
                ids = memlog_search(mem, q["question"], args.mode)
                latencies.append((time.perf_counter() - started) * 1000)
                wanted = evidence(q)
                mine.append((int(q.get("category", 0)), recall([dia.get(i, "") for i in ids], wanted)))
                started = time.perf_counter()
                raw_ids = bm25.search(q["question"], max(KS))
                raw_latencies.append((time.perf_counter() - started) * 1000)
                raw.append(recall(raw_ids, wanted))
            for key, value in false_hits(mem, no_match, modes if mem.proj.embedder else [args.mode]).items():
                counts[key] = counts.get(key, 0) + value
        log(f"conversation {n + 1}/{len(data)}: {turns} turns, {len(questions)} questions")
    out = summarise(mine, raw, latencies, turns_total, ingest_s, args.mode)
    out["bm25_query_p50_ms"] = round(percentile(raw_latencies, 50), 3) if raw_latencies else 0.0
    return out | false_hit_rates(counts, no_match, len(data), args.mode)


def _mean(rows: Sequence[dict[int, float]], k: int) -> float:
    return round(100 * sum(r[k] for r in rows) / len(rows), 1) if rows else 0.0


def summarise(mine: list[tuple[int, dict[int, float]]], raw: list[dict[int, float]], latencies: list[float],
              turns: int, ingest_s: float, mode: str | None) -> dict[str, Any]:
    rows = [r for _, r in mine]
    out: dict[str, Any] = {f"recall_at_{k}": _mean(rows, k) for k in KS}
    out |= {f"bm25_recall_at_{k}": _mean(raw, k) for k in KS}
    out |= {f"dragon_recall_at_{k}": v for k, v in DRAGON.items()}
    out["by_category"] = {
        CATEGORIES.get(c, str(c)): {"questions": len(sub), **{f"recall_at_{k}": _mean(sub, k) for k in KS}}
        for c in sorted({c for c, _ in mine}) if (sub := [r for cc, r in mine if cc == c])}
    out["query_p50_ms"] = round(percentile(latencies, 50), 3) if latencies else 0.0
    out["query_p99_ms"] = round(percentile(latencies, 99), 3) if latencies else 0.0
    out["ingest_turns_per_s"] = round(turns / ingest_s, 1) if ingest_s else 0.0
    out |= {"questions": len(rows), "turns": turns, "mode": mode or "default"}
    return out


def table(r: dict[str, Any]) -> str:
    head = ["", *(f"R@{k}" for k in KS)]
    body = [["memlog", *(f"{r[f'recall_at_{k}']:.1f}" for k in KS)],
            ["raw Tantivy BM25", *(f"{r[f'bm25_recall_at_{k}']:.1f}" for k in KS)],
            ["DRAGON (paper)", *(f"{DRAGON[k]:.1f}" for k in KS)]]
    body += [[f"  {name} ({c['questions']})", *(f"{c[f'recall_at_{k}']:.1f}" for k in KS)]
             for name, c in r["by_category"].items()]
    lines = [f"recall on {r['questions']} questions, {r['turns']} turns (mode: {r['mode']})",
             *align(head, body),
             f"query p50 {r['query_p50_ms']:.2f} ms, p99 {r['query_p99_ms']:.2f} ms "
             f"(raw Tantivy BM25 p50 {r['bm25_query_p50_ms']:.2f} ms); "
             f"ingest {r['ingest_turns_per_s']:.0f} turns/s",
             f"no-match set: false hits in {r['false_hit_rate']:.2f} % of {r['no_match_searches']} searches "
             f"(by mode {r['false_hit_rate_by_mode']}, by kind {r['false_hit_rate_by_kind']})"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--mode", choices=("text", "semantic", "hybrid"), default=None)
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--questions", type=int, default=None, help="only the first N questions of each")
    parser.add_argument("--dir", type=Path, default=None, help="scratch directory parent")
    parser.add_argument("--precision-off", action="store_true",
                        help="the search's precision levers off (the earlier behaviour, for a before figure)")
    parser.add_argument("--set", action="append", help="a lever for one measurement: tuning.NAME=VALUE "
                        "or fusion.NAME=VALUE (see projections.search.rank.Tuning and fusion.Fusion)")
    args = parser.parse_args(argv)
    if args.precision_off:
        precision_off()
    for setting in args.set or ():  # name=value of rank.TUNING or fusion.FUSION (a measurement's lever)
        set_lever(setting)
    return run_main(args, run, table, "bench-recall-")


def set_lever(setting: str) -> None:
    """Set one of the ranking's levers from ``tuning.NAME=VALUE`` or ``fusion.NAME=VALUE``."""
    from projections.search.fusion import FUSION
    from projections.search.rank import TUNING

    name, _, value = setting.partition("=")
    where, _, field = name.partition(".")
    target = {"tuning": TUNING, "fusion": FUSION}[where]
    old = getattr(target, field)
    setattr(target, field, value if isinstance(old, str) else type(old)(json.loads(value)))


def precision_off() -> None:
    """Switch the precision levers off: identifiers matched like other words,
    no coverage rule, the whole query embedded, scores as shares of the best."""
    from projections.search.fusion import FUSION
    from projections.search.rank import TUNING

    TUNING.identifiers = TUNING.cover_all = False
    FUSION.meaning = False
    FUSION.scores = "shares"


if __name__ == "__main__":
    sys.exit(main())
