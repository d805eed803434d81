"""The benchmarks in tools/ run on tiny inputs and print their --json keys (no timing checks)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"

CASES = [
    ("bench_log.py", ["--events", "2000", "--repeats", "1"],
     ["append_batch_eps", "raw_batch_eps", "append_batch_ratio", "append_single_eps", "raw_single_eps",
      "append_single_ratio", "read_decode_eps", "raw_scan_eps"]),
    ("bench_projections.py", ["--events", "1500", "--queries", "30", "--fts5-queries", "5",
                              "--repeats", "1"],
     ["replay_views_eps", "raw_scan_decode_eps", "rebuild_all_docs_per_s", "raw_tantivy_docs_per_s",
      "rebuild_ratio", "search_p50_ms", "search_p99_ms", "raw_tantivy_p50_ms", "fts5_p50_ms", "events"]),
    ("bench_api.py", ["--events", "1000", "--repeats", "1"],
     ["api_single_eps", "log_single_eps", "api_batch_eps", "log_batch_eps", "facade_search_p50_ms",
      "projection_search_p50_ms"]),
    ("bench_delete.py", ["--entries", "1500"],
     ["delete_total_s", "log_compact_s", "index_rebuild_s", "verify_s", "entries"]),
    ("bench_audit.py", ["--events", "1500", "--reads", "30", "--queries", "10"],
     ["asof_entry_p50_ms", "asof_entry_p99_ms", "asof_search_p50_ms", "search_p50_ms", "events"]),
    ("soak_crash.py", ["--trials", "2"],
     ["trials", "acknowledged_lost", "leaks_after_recovery", "broken_commands_after_recovery",
      "false_verified_records"]),
]


@pytest.mark.slow
@pytest.mark.parametrize(("tool", "args", "keys"), CASES, ids=[c[0] for c in CASES])
def test_benchmark_runs_and_prints_its_keys(tool: str, args: list[str], keys: list[str],
                                            tmp_path: Path) -> None:
    """Each benchmark runs on a tiny input and its --json object has the issue's keys."""
    result = subprocess.run([sys.executable, str(TOOLS / tool), *args, "--json"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(result.stdout)
    assert set(keys) <= set(data), set(keys) - set(data)


def test_corpus_is_deterministic() -> None:
    """The corpus generator gives the same entries for the same seed."""
    sys.path.insert(0, str(TOOLS))
    import corpus

    first = [e.content for _, e in corpus.Corpus(3).entries(20)]
    assert first == [e.content for _, e in corpus.Corpus(3).entries(20)]
    assert {e.kind for _, e in corpus.Corpus(3).entries(400)} >= {"message", "decision", "finding",
                                                                 "preference", "lesson", "task"}
