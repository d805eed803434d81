"""The benchmarks in tools/bench/ and the soak in tools/ops/ run on tiny inputs and print their
--json keys (no timing checks)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools" / "bench"
OPS = TOOLS.parent / "ops"

CASES = [
    ("bench_log.py", ["--events", "2000", "--repeats", "1"],
     ["append_batch_eps", "raw_batch_eps", "append_batch_ratio", "append_single_eps", "raw_single_eps",
      "append_single_ratio", "read_decode_eps", "raw_scan_eps", "append_floor_us",
      "append_batch_floor_ratio"]),
    ("bench_projections.py", ["--events", "1500", "--queries", "30", "--fts5-queries", "5",
                              "--repeats", "1"],
     ["replay_views_eps", "raw_scan_decode_eps", "rebuild_all_docs_per_s", "raw_tantivy_docs_per_s",
      "rebuild_ratio", "search_p50_ms", "search_p99_ms", "raw_tantivy_p50_ms", "fts5_p50_ms", "events",
      "small_store_search_p50_ms", "replay_ratio", "replay_peak_rss_mb", "raw_views_write_s",
      "replay_floor_ratio", "rebuild_floor_ratio", "raw_tantivy_cpu_s", "views_build_floor_s",
      "replay_build_floor_ratio", "doc_make_s", "embed_floor_s", "rebuild_build_floor_ratio"]),
    ("bench_api.py", ["--events", "1000", "--repeats", "1"],
     ["api_single_eps", "log_single_eps", "api_batch_eps", "log_batch_eps", "facade_search_p50_ms",
      "projection_search_p50_ms"]),
    ("bench_delete.py", ["--entries", "1500", "--repeats", "2"],
     ["delete_total_s", "delete_repeats_s", "log_compact_s", "index_rebuild_s", "verify_s", "entries"]),
    ("bench_audit.py", ["--events", "1500", "--reads", "30", "--queries", "10"],
     ["asof_entry_p50_ms", "asof_entry_p99_ms", "asof_search_p50_ms", "search_p50_ms", "events"]),
    ("bench_maintain.py", ["--sessions", "40", "--entries", "400"],
     ["maintain_idle_s", "maintain_due_s", "raw_lmdb_sessions_s", "due_items", "due_after", "idle_due"]),
    ("append_guards.py", ["--singles", "100", "--repeats", "1"],
     ["append_single_ratio", "append_single_unguarded_ratio", "steps"]),
    ("soak_crash.py", ["--trials", "2"],
     ["trials", "acknowledged_lost", "leaks_after_recovery", "broken_commands_after_recovery",
      "false_verified_records"]),
]


NATS_CASE = ("bench_nats.py", ["--events", "1000", "--single", "20", "--replay-events", "200"],
             ["nats_r3_single_eps", "raw_nats_r3_single_eps", "nats_r3_single_ratio", "nats_r3_batch_eps",
              "nats_replay_eps"])


@pytest.mark.slow
@pytest.mark.parametrize(("tool", "args", "keys"), [
    *(pytest.param(*c, id=c[0]) for c in CASES),
    pytest.param(*NATS_CASE, marks=pytest.mark.nats_cluster, id=NATS_CASE[0])])
def test_benchmark_runs_and_prints_its_keys(tool: str, args: list[str], keys: list[str],
                                            tmp_path: Path) -> None:
    """Each benchmark runs on a tiny input and its --json object has the issue's keys."""
    where = OPS if (OPS / tool).is_file() else TOOLS
    result = subprocess.run([sys.executable, str(where / tool), *args, "--json"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(result.stdout)
    assert set(keys) <= set(data), set(keys) - set(data)


@pytest.mark.slow
def test_bench_delete_builds_a_fresh_store_in_dir_each_run(tmp_path: Path) -> None:
    """bench_delete --dir PARENT: each run builds its own store there and removes
    it, so a second run measures the same log (not one with the corpus twice)."""
    parent = tmp_path / "scratch"
    parent.mkdir()
    sizes = []
    for _ in range(2):
        result = subprocess.run([sys.executable, str(TOOLS / "bench_delete.py"), "--entries", "600",
                                 "--dir", str(parent), "--json"],
                                cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
        assert result.returncode == 0, result.stderr[-2000:]
        sizes.append(json.loads(result.stdout)["log_bytes"])
        assert list(parent.iterdir()) == []
    assert sizes[0] == sizes[1]
    nowhere = str(tmp_path / "none")
    missing = subprocess.run([sys.executable, str(TOOLS / "bench_delete.py"), "--dir", nowhere],
                             cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False)
    assert missing.returncode == 2 and "is not a directory" in missing.stderr


def test_corpus_is_deterministic() -> None:
    """The corpus generator gives the same entries for the same seed."""
    sys.path.insert(0, str(TOOLS))
    import corpus

    first = [e.content for _, e in corpus.Corpus(3).entries(20)]
    assert first == [e.content for _, e in corpus.Corpus(3).entries(20)]
    assert {e.kind for _, e in corpus.Corpus(3).entries(400)} >= {"message", "decision", "finding",
                                                                 "preference", "lesson", "task"}


def _tiny_locomo(path: Path) -> Path:
    """Two tiny conversations in LoCoMo's layout (CI has no ../shared/bench)."""
    samples = []
    for c in range(2):
        turns = [{"speaker": "Ann" if i % 2 else "Bo", "dia_id": f"D1:{i + 1}",
                  "text": f"turn {i} about {'kayaks' if i == 3 else 'the weather'} {c}"} for i in range(8)]
        turns[5]["blip_caption"] = "a photo of a red kayak"
        later = [{"speaker": "Ann", "dia_id": "D2:1", "text": "we moved to Lisbon last spring"}]
        samples.append({"sample_id": f"conv-{c}", "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo", "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": turns, "session_2_date_time": "10:02 am on 1 June, 2023", "session_2": later},
            "qa": [{"question": "What does Ann paddle?", "answer": "kayaks", "evidence": ["D1:4"],
                    "category": 4},
                   {"question": "Where did they move?", "answer": "Lisbon", "evidence": ["D2:1; D1:6"],
                    "category": 2},
                   {"question": "No evidence here?", "answer": "-", "category": 5}]})
    path.write_text(json.dumps(samples))
    return path


@pytest.mark.slow
def test_bench_recall_runs_and_prints_its_keys(tmp_path: Path) -> None:
    """bench_recall on two tiny conversations: the issue's --json keys, recall in [0, 100]."""
    data = _tiny_locomo(tmp_path / "tiny.json")
    result = subprocess.run([sys.executable, str(TOOLS / "bench_recall.py"), "--data", str(data), "--json"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads(result.stdout)
    keys = ["recall_at_5", "recall_at_10", "recall_at_25", "recall_at_50", "bm25_recall_at_10",
            "query_p50_ms", "query_p99_ms", "ingest_turns_per_s"]
    assert set(keys) <= set(out), set(keys) - set(out)
    assert out["questions"] == 4 and out["recall_at_50"] > 0
    assert all(0 <= out[k] <= 100 for k in keys if k.startswith(("recall", "bm25")))


@pytest.mark.slow
def test_bench_embed_runs_and_prints_its_keys(tmp_path: Path) -> None:
    """bench_embed on two tiny conversations: the shipped model's recall and speed keys."""
    data = _tiny_locomo(tmp_path / "tiny.json")
    result = subprocess.run([sys.executable, str(TOOLS / "bench_embed.py"), "--data", str(data), "--json"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads(result.stdout)
    assert {"recall_at_10", "recall_at_50", "sentences_per_s", "query_p50_ms"} <= set(out)
    assert out["questions"] == 4 and 0 <= out["recall_at_10"] <= 100


@pytest.mark.slow
def test_bench_import_runs_and_prints_its_keys(tmp_path: Path) -> None:
    """bench_import on a tiny bmad tree: the import rate beside its raw anchors."""
    result = subprocess.run([sys.executable, str(TOOLS / "bench_import.py"), "--records", "300", "--json"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(result.stdout)
    assert {"records", "import_rps", "raw_decode_rps", "raw_lmdb_rps", "index_s"} <= set(data)
    assert data["records"] == data["written"] == 300



@pytest.mark.slow
def test_bench_lifecycle_runs_and_prints_its_keys(tmp_path: Path) -> None:
    """bench_lifecycle on a tiny session: compact_10mb_s, its raw anchor and the check's overhead."""
    args = ["--mb", "0.05", "--appends", "5", "--resource-appends", "30", "--json"]
    result = subprocess.run([sys.executable, str(TOOLS / "bench_lifecycle.py"), *args], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads(result.stdout)
    assert {"compact_10mb_s", "raw_anchor_s", "check_overhead_ratio", "check_us", "flush_s",
            "append_overhead_ratio"} <= set(out)
    assert out["removed"] > 0 and out["bytes_after"] < out["bytes_before"]


@pytest.mark.slow
def test_bench_resources_runs_and_prints_its_keys(tmp_path: Path) -> None:
    """bench_resources on a tiny run: the flush and append-overhead keys beside their anchors."""
    result = subprocess.run([sys.executable, str(TOOLS / "bench_resources.py"), "--appends", "60",
                             "--repeats", "1", "--json"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads(result.stdout)
    keys = {"flush_s", "flush_summarise_s", "flush_plain_append_s", "append_overhead_ratio",
            "append_resource_ms", "append_plain_ms"}
    assert keys <= set(out), keys - set(out)
    assert out["flush_s"] > 0 and out["append_overhead_ratio"] > 0


def test_append_guards_puts_every_guard_back() -> None:
    """tools/bench/append_guards.py takes guards out only within its block, and an
    error inside it puts them back as well."""
    sys.path.insert(0, str(TOOLS))
    import append_guards

    from eventstore import codec
    from eventstore.lmdb import segments, write
    from eventstore.storage import env, files

    def guards() -> tuple[object, ...]:
        return (files.MaintenanceLock.hold_shared, files.MaintenanceLock.release_shared,
                env.SharedEnv._current_generation, write.conceal, segments.reveal, codec._event_decoder)

    before = guards()
    with pytest.raises(RuntimeError), append_guards.without(3):
        assert all(a is not b for a, b in zip(guards(), before, strict=True))
        raise RuntimeError("inside")
    assert guards() == before


@pytest.mark.slow
def test_startup_prints_its_keys(tmp_path: Path) -> None:
    """startup.py on a tiny store: each figure, its ratio to the import floor, and its goal's verdict."""
    args = ["--runs", "1", "--entries", "50", "--json"]
    result = subprocess.run([sys.executable, str(TOOLS / "startup.py"), *args], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads(result.stdout)
    for name in ("help", "search", "context"):
        assert {f"{name}_ms", f"{name}_floor_ratio", f"{name}_goal_met"} <= set(out)
    assert out["floor_ms"] > 0


def test_report_writes_a_generated_file_from_saved_json(tmp_path: Path) -> None:
    """report.py --from DIR: a header naming the command that regenerates it, then each saved figure."""
    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "startup.json").write_text(json.dumps({"help_ms": 99.5, "help_goal_met": True}))
    out = tmp_path / "benchmarks.md"
    args = ["--from", str(saved), "--out", str(out)]
    result = subprocess.run([sys.executable, str(TOOLS / "report.py"), *args], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    text = out.read_text()
    assert "generated" in text and "python tools/bench/report.py" in text
    assert "| `help_ms` | 99.5 |" in text and "Not measured: no bench_log.json" in text
