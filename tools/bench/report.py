"""Write docs/benchmarks.md: the current figures of the benchmarks in tools/bench/.

Runs each benchmark with ``--json`` (or reads its saved output from
``--from DIR/NAME.json``) and writes one table per benchmark. By default only
the cheap benchmarks run, at sizes that finish in a minute or two on a small
machine; ``--heavy`` adds the benchmarks at their full sizes (tens of minutes,
and the LoCoMo data beside the repository for recall, context and the model).

    python tools/bench/report.py [--heavy] [--from DIR] [--out docs/benchmarks.md]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
TIMEOUT_S = 3600

# (tool, arguments, what it measures); the cheap ones run by default.
CHEAP: list[tuple[str, list[str], str]] = [
    ("startup.py", ["--runs", "7"], "memlog's start: --help, search and context on a 1k-entry store"),
    ("bench_log.py", ["--events", "20000", "--repeats", "1"], "appends and reads vs raw LMDB (20k events)"),
    ("bench_api.py", ["--events", "1000", "--queries", "200", "--repeats", "1"],
     "the facade vs the layer beneath it (1k events)"),
    ("bench_resources.py", ["--appends", "500", "--repeats", "1"], "a resource's flush and append overhead"),
    ("bench_dedup.py", [], "lesson dedup per write"),
]
HEAVY: list[tuple[str, list[str], str]] = [
    ("bench_projections.py", [], "replay, rebuild and search vs raw scan, raw Tantivy and FTS5"),
    ("bench_delete.py", [], "deleting one entry of 1M with the purge"),
    ("bench_audit.py", [], "as-of reads and as-of search on 1M events"),
    ("bench_maintain.py", [], "memlog maintain on 100k entries and 1,000 sessions"),
    ("bench_lifecycle.py", [], "compacting a 10 MB session, flushing a resource"),
    ("bench_import.py", [], "importing a BMAD tree of 100k records"),
    ("bench_redaction.py", [], "the redaction patterns on adversarial 1 MiB inputs"),
    ("bench_recall.py", [], "recall@k on LoCoMo vs raw Tantivy BM25"),
    ("bench_context.py", [], "the context block's evidence share on LoCoMo"),
    ("bench_embed.py", [], "the shipped static embedding model on LoCoMo"),
]


def run_one(tool: str, args: Sequence[str], saved: Path | None) -> dict[str, Any] | str:
    """One benchmark's --json object, or why there is none."""
    if saved is not None:
        path = saved / (Path(tool).stem + ".json")
        return json.loads(path.read_text()) if path.is_file() else f"no {path.name} in {saved}"
    pythonpath = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": pythonpath}
    print(f"running {tool} {' '.join(args)}", file=sys.stderr, flush=True)
    try:
        result = subprocess.run([sys.executable, str(HERE / tool), *args, "--json"], capture_output=True,
                                text=True, timeout=TIMEOUT_S, check=False, env=env)
    except subprocess.TimeoutExpired:
        return f"did not finish in {TIMEOUT_S} s"
    if result.returncode != 0:
        return f"exit {result.returncode}: {result.stderr.strip().splitlines()[-1:] or ''}"
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def cell(value: Any) -> str:
    """A figure as a table cell: floats to 4 significant digits, lists and maps as JSON."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict | list):
        return "`" + json.dumps(value, separators=(",", ":"))[:120] + "`"
    return str(value)


def section(tool: str, args: Sequence[str], what: str, data: dict[str, Any] | str) -> list[str]:
    """One benchmark's heading, command and table of figures."""
    command = " ".join(["python", f"tools/bench/{tool}", *args, "--json"])
    lines = [f"## {Path(tool).stem}", "", f"{what}. `{command}`", ""]
    if isinstance(data, str):
        return [*lines, f"Not measured: {data}.", ""]
    lines += ["| key | value |", "|---|---|"]
    lines += [f"| `{key}` | {cell(value)} |" for key, value in data.items()]
    return [*lines, ""]


def render(sections: list[list[str]], heavy: bool) -> str:
    """The whole document: the generated-file header, then every section."""
    regenerate = "python tools/bench/report.py" + (" --heavy" if heavy else "")
    head = ["# Benchmarks: current figures", "",
            "For anyone who wants today's figures of memlog's benchmarks, each beside the anchor",
            "it measures in the same run (see each tool's docstring for what the keys mean).", "",
            f"This file is generated: do not edit it. Regenerate it with `{regenerate}`",
            "(`--heavy` adds the benchmarks at full size; `--from DIR` reads saved `--json` outputs).",
            f"Machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}.", ""]
    return "\n".join(head + [line for s in sections for line in s]).rstrip() + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--heavy", action="store_true", help="also run the benchmarks at full size")
    parser.add_argument("--from", dest="saved", type=Path, default=None, metavar="DIR",
                        help="read DIR/NAME.json instead of running each benchmark")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = parser.parse_args(argv)
    chosen = CHEAP + (HEAVY if args.heavy else [])
    sections = [section(tool, targs, what, run_one(tool, targs, args.saved)) for tool, targs, what in chosen]
    args.out.write_text(render(sections, args.heavy))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
