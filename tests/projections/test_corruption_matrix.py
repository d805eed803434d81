"""Every kind of projection file flipped, truncated or deleted: each read either
repairs the projections by itself (and answers exactly as the sound store does)
or fails with a clean memlog error naming the file and `memlog replay`; then
`memlog replay` succeeds and the reads equal the sound store's. Never silently
wrong, never death by signal.

Each case runs in a fresh interpreter (this file run as a script, see
``_child``), so a SIGBUS or SIGSEGV is a failed case, not a dead pytest. The
child runs the CLI in-process: ``search``, ``show`` and ``stats``, then
``replay``, then the reads again, and prints what each returned.

The template store is replayed once before the cases are cut from it, so its
search index has the layout a rebuild gives: rankings can be compared exactly.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from commands import MemoryLog

PAST = "2020-01-01T00:00:00Z"  # decay sits at its floor: results do not move with the clock
READS: list[list[str]] = [["search", "postgres lag", "--limit", "50"], ["search", "pgbouncer"],
                          ["show", "{entry}"], ["stats"]]


# -- the template ---------------------------------------------------------------

def _build(path: Path) -> str:
    """A store of three sessions and their entries; returns an entry id to show."""
    path.mkdir(parents=True)
    (path / "config.toml").write_text("search_shards = 4\nrecord_access = false\n")
    with MemoryLog.open(path) as mem:
        for s in range(3):
            sid = mem.start_session(user_id="u1", agent_ids=["a1"])
            for i in range(10):
                mem.add_message(sid, role="user", content=f"postgres replica lag {i} in session {s}",
                                occurred_at=PAST)
                if i % 4 == 0:
                    mem.search("postgres")  # commits: several segments per shard
            mem.record_decision(sid, decision=f"use pgbouncer {s}", rationale="latency", occurred_at=PAST)
        entry = mem.search("lag 3 session 1")[0].id
        mem.remember("u1", "editor", "vim")
        mem.replay()
    return entry


class Template(NamedTuple):
    path: Path
    entry: str
    sound: dict[str, Any]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    path = tmp_path_factory.mktemp("matrix") / "store"
    entry = _build(path)
    sound = _run_child(path, entry)
    assert sound["returncode"] == 0, sound
    for label in ("before", "after"):
        assert all(code == 0 for code, _, _ in sound[label]), sound[label]
    assert sound["before"] == sound["after"]
    return Template(path, entry, sound)


# -- corruptions ----------------------------------------------------------------

def _flip(path: Path) -> None:
    """Invert bytes: LMDB's two meta pages, the middle of anything else (an
    empty file gets garbage)."""
    data = bytearray(path.read_bytes())
    if not data:
        path.write_bytes(b"\xff" * 16)
        return
    spans = [(16, 80), (4096 + 16, 4096 + 80)] if path.name == "data.mdb" else \
        [(len(data) // 2, len(data) // 2 + 16)]
    for start, end in spans:
        for i in range(start, min(end, len(data))):
            data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)


def _delete(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    else:
        shutil.rmtree(path)


def _dangle(path: Path) -> None:
    path.unlink()
    path.symlink_to(f"{path.name}-gone" if path.name == "proj" else f"{path.name}.0bad")


def _to_dir(path: Path) -> None:
    path.unlink()
    (path / "views").mkdir(parents=True)
    (path / "views" / "data.mdb").write_bytes(b"\x01" * 5000)


Damage = Callable[[Path], None]
FILE_DAMAGE: dict[str, Damage] = {"flip": _flip, "truncate": _truncate, "delete": _delete}


class Case(NamedTuple):
    name: str
    locate: Callable[[Path], Path]  # the data directory -> the file to damage
    damage: Damage


def _proj(data: Path) -> Path:
    return data / os.readlink(data / "proj")


def _shard(data: Path) -> Path:
    """The link of the shard with the most segment files."""
    links = sorted((_proj(data) / "search").glob("shard-??"))
    return max(links, key=lambda link: (len(list(link.glob("*.idx"))), link.name))


def _segment_file(ext: str) -> Callable[[Path], Path]:
    def locate(data: Path) -> Path:
        shard = _shard(data)
        return shard.parent / os.readlink(shard) / sorted(p.name for p in shard.glob(f"*.{ext}"))[0]
    return locate


def _in_proj(rel: str) -> Callable[[Path], Path]:
    return lambda data: _proj(data) / rel


def _in_shard(name: str) -> Callable[[Path], Path]:
    return lambda data: _shard(data).parent / os.readlink(_shard(data)) / name


FILES: dict[str, Callable[[Path], Path]] = {
    **{rel: _in_proj(rel) for rel in ("views/data.mdb", "views/lock.mdb", "views/generation", "layout",
                                      "search/maint.lock", "search/relinked", "search.lock",
                                      "search/checked")},
    "shard meta.json": _in_shard("meta.json"),
    "shard .managed.json": _in_shard(".managed.json"),
    **{f"segment .{ext}": _segment_file(ext) for ext in ("idx", "term", "store", "fast", "pos", "fieldnorm")},
}

CASES = [Case(f"{what} {how}", locate, damage) for what, locate in FILES.items()
         for how, damage in FILE_DAMAGE.items()] + [
    Case("shard link delete", _shard, _delete),
    Case("shard link dangling", _shard, _dangle),
    Case("shard directory delete", lambda data: _shard(data).parent / os.readlink(_shard(data)), _delete),
    Case("proj link delete", lambda data: data / "proj", _delete),
    Case("proj link dangling", lambda data: data / "proj", _dangle),
    Case("proj link is a directory", lambda data: data / "proj", _to_dir),
    Case("proj directory delete", _proj, _delete),
]


# -- running the cases ----------------------------------------------------------

def _run_child(data: Path, entry: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, str(data), entry], capture_output=True, text=True,
                          timeout=120)
    if proc.returncode != 0:
        return {"returncode": proc.returncode, "stderr": proc.stderr[-2000:]}
    return {"returncode": 0, **json.loads(proc.stdout)}


def _normal(label: str, code: int, out: str) -> Any:
    """A read's output, without what differs between sound stores (sizes, checkpoints)."""
    if code != 0:
        return None
    data = json.loads(out)
    if label == "stats":
        data.pop("bytes_on_disk")
        data.pop("checkpoints")
    return data


def _check(case: Case, template: Template, tmp: Path) -> list[str]:
    """Run one case; return what went wrong (nothing when it passed)."""
    data = tmp / case.name.replace(" ", "_")
    shutil.copytree(template.path, data, symlinks=True)
    target = case.locate(data)
    named = {str(target.relative_to(data)), target.name}
    case.damage(target)
    got = _run_child(data, template.entry)
    if got["returncode"] != 0:
        return [f"{case.name}: the child died (exit {got['returncode']}): {got['stderr']}"]
    wrong = []
    for phase in ("before", "after"):
        for args, (code, out, err), (_, sound_out, _) in zip(READS, got[phase], template.sound[phase],
                                                             strict=True):
            label = args[0]
            if code == 0 and _normal(label, code, out) != _normal(label, 0, sound_out):
                wrong.append(f"{case.name}: {label} {phase} the replay differs from the sound store")
            elif code != 0 and (phase == "after" or code != 5 or "memlog replay" not in err
                                or not any(n in err for n in named)):
                wrong.append(f"{case.name}: {label} {phase} the replay failed unclearly: {code} {err!r}")
    if got["replay"][0] != 0:
        wrong.append(f"{case.name}: replay failed: {got['replay']}")
    if got["leftovers"]:
        wrong.append(f"{case.name}: directories left after the replay: {got['leftovers']}")
    return wrong


def test_every_projection_file_damaged(template: Template, tmp_path: Path) -> None:
    """Each case: repaired to the sound answers, or a clean error naming the
    file and `memlog replay`; then replay succeeds and the reads are sound."""
    with ThreadPoolExecutor(max(2, os.cpu_count() or 1)) as pool:
        results = list(pool.map(lambda case: _check(case, template, tmp_path), CASES))
    wrong = [line for lines in results for line in lines]
    assert not wrong, "\n".join(wrong)


# -- the child ------------------------------------------------------------------

def _child(data: str, entry: str) -> None:
    """Run in a fresh interpreter: the reads, a replay, the reads again."""
    from click.testing import CliRunner

    from commands.cli import cli

    def run(*args: str) -> tuple[int, str, str]:
        result = CliRunner().invoke(cli, ["--dir", data, "--json", *args])
        return result.exit_code, result.stdout, result.stderr

    def reads() -> list[tuple[int, str, str]]:
        return [run(*[a.format(entry=entry) for a in args]) for args in READS]

    before = reads()
    replay = run("replay")
    after = reads()
    current = os.readlink(Path(data) / "proj")
    leftovers = sorted(p.name for p in Path(data).glob("proj-*") if p.name != current)
    print(json.dumps({"before": before, "replay": replay, "after": after, "leftovers": leftovers}))


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2])
