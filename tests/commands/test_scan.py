"""The purge's scan scope: every file but untouched payload segments, shards and vector partitions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commands.app.forgetting import scan
from commands.app.forgetting.scan import Matcher, purge_scope, scan_needles


def test_scope_leaves_out_only_untouched_segments_shards_and_vector_partitions(tmp_path: Path) -> None:
    """Rewritten segments, shards and vector partitions, the main log, the views,
    the vectors' main environment, scratch copies and stray files are scanned;
    the other segments, shards and partitions are not."""
    files = [
        "log/data.mdb", "log/seg-000000/data.mdb", "log/seg-000001/data.mdb",
        "proj-0/views/data.mdb", "proj-0/search/shard-00.ab12/x.term",
        "proj-0/search/shard-01.cd34/x.term", "proj-0/search/shard-01.cd34/meta.json",
        "log/.compact-1/data.mdb", "stray.tmp",
        "proj-0/vectors/data.mdb", "proj-0/vectors/part-000000/data.mdb",
        "proj-0/vectors/part-000001/data.mdb", "proj-0/vectors/part-000002/data.mdb",
        "proj-0/vectors/part-000000/.compact-ab/data.mdb",
    ]
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"needle-" * 8)
    scope = purge_scope([str(tmp_path / "log/seg-000001/data.mdb"),
                         str(tmp_path / "proj-0/search/shard-01"),
                         str(tmp_path / "proj-0/vectors/part-000001/data.mdb")])
    found, _, _ = scan_needles(tmp_path, [b"needle-" * 8], scope)
    assert sorted(found) == sorted(set(files) - {"log/seg-000000/data.mdb",
                                                 "proj-0/search/shard-00.ab12/x.term",
                                                 "proj-0/vectors/part-000000/data.mdb",
                                                 "proj-0/vectors/part-000002/data.mdb"})


def _naive(data: bytes, needles: list[bytes]) -> tuple[int, set[bytes]]:
    """Every occurrence of every needle, one substring search at a time."""
    hits, which = 0, set()
    for needle in set(needles):
        at = data.find(needle)
        while at >= 0:
            hits, at = hits + 1, data.find(needle, at + 1)
            which.add(needle)
    return hits, which


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=700), min_size=1, max_size=12), st.data())
def test_the_sampling_matcher_finds_what_a_substring_search_finds(needles: list[bytes],
                                                                    data: st.DataObject) -> None:
    """Exact at every tier, at any offset, overlapping and repeated (small
    alphabets make grams repeat inside a needle and across needles)."""
    pieces = data.draw(st.lists(st.one_of(st.sampled_from(needles), st.binary(max_size=40),
                                          st.sampled_from([b"a" * 30, b"ab" * 300])), max_size=30))
    blob = b"".join(pieces)
    for find_up_to in (0, 6):  # sampled always, and few needles found one at a time
        which: set[bytes] = set()
        assert Matcher(needles, find_up_to).hits(blob, which) == _naive(blob, needles)[0]
        assert which == _naive(blob, needles)[1]


def test_the_matcher_reads_a_mapped_file_as_bytes(tmp_path: Path) -> None:
    long = bytes(range(256)) * 4
    (tmp_path / "big").write_bytes(b"x" * (2 << 20) + long + b"y" * 99 + b"short!" + long[:100])
    found, scanned, which = scan_needles(tmp_path, [long, b"short!", long[:100], b"absent" * 20])
    # long[:100] lies at each of long's 4 periods and once more at the end
    assert found == {"big": 7} and scanned > 2 << 20 and which == {long, b"short!", long[:100]}


def _tree(root: Path, many: bool = False) -> list[bytes]:
    """Files of several sizes (one mapped: over 1 MiB), some holding needles;
    returns the needles (with ``many``, enough for the sampling matcher)."""
    needles = [b"first deleted text " * 3, b"second deleted text " * 3, b"never written " * 3]
    if many:
        needles += [b"more deleted text %d " % n * 4 for n in range(8)]
    for n in range(9):
        body = bytearray(b"." * ((3 << 20) if n == 8 else n * 40_000 + 1_000))
        if n % 3 == 0:
            body[n * 100 : n * 100 + len(needles[0])] = needles[0]
        if n in (4, 8):
            body[-len(needles[1]) :] = needles[1]
        if many and n == 5:
            body[7 : 7 + len(needles[5])] = needles[5]
        (root / f"d{n % 2}").mkdir(exist_ok=True)
        (root / f"d{n % 2}" / f"f{n}").write_bytes(bytes(body))
    return needles


def _shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every scan shares its files with a child, whatever this machine's size."""
    monkeypatch.setattr(scan, "PARALLEL_FROM", 1)
    monkeypatch.setattr(scan, "usable_cpus", lambda: 2)


@pytest.mark.parametrize("many", [False, True], ids=["few needles", "sampled"])
def test_a_scan_shared_with_a_child_finds_what_one_process_finds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, many: bool) -> None:
    """A large scan gives about half of its files to a child, which answers;
    the files found, the hits, the bytes read and the needles found are the same."""
    needles = _tree(tmp_path, many)
    alone = scan_needles(tmp_path, needles)
    answers: list[Any] = []
    real = scan._Child.results

    def results(self: Any, needles: list[bytes], files: int) -> Any:
        answers.append(real(self, needles, files))
        return answers[-1]

    _shared(monkeypatch)
    monkeypatch.setattr(scan._Child, "results", results)
    shared = scan_needles(tmp_path, needles)
    assert answers and answers[0][0] is not None and 0 < len(answers[0][0]) < 9  # the child did its part
    assert shared == alone and len(alone[0]) == 5 + many and alone[1] > 3 << 20
    assert alone[2] == set(needles[:2]) | ({needles[5]} if many else set())


_FAKES = {
    "exits 1": "import sys; sys.stdin.buffer.read(); sys.exit(1)",
    "bad output": "import sys; sys.stdin.buffer.read(); sys.stdout.buffer.write(b'not a pickle')",
    "hangs": "import sys, time; sys.stdin.buffer.read(); time.sleep(60)",
    "reads nothing": ("import pickle, sys; needles, paths = pickle.load(sys.stdin.buffer); "
                      "pickle.dump(([(0, 0)] * len(paths), set()), sys.stdout.buffer)"),
}


@pytest.mark.parametrize("how", ["no start", *_FAKES])
def test_a_failed_child_leaves_its_files_to_this_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         how: str) -> None:
    """Whatever goes wrong with the child (it cannot start, fails, answers
    nonsense, outlives its deadline, or could not read its files), every file
    is still read."""
    root = tmp_path / "tree"
    root.mkdir()
    needles = _tree(root)
    alone = scan_needles(root, needles)
    _shared(monkeypatch)
    monkeypatch.setattr(scan, "CHILD_SECONDS", 2.0)
    if how == "no start":
        monkeypatch.setattr(scan.sys, "executable", "")
    else:
        (tmp_path / "fake_scanner.py").write_text(_FAKES[how])
        monkeypatch.setattr(scan.scanner, "__file__", str(tmp_path / "fake_scanner.py"))
    assert scan_needles(root, needles) == alone
