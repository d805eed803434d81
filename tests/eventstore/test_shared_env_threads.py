"""A reopen (after a purge swapped files) waits until no other thread of the
process is inside an operation on the old environment: closing it under
another thread's transaction corrupts that thread's robust-mutex list, and its
next LMDB lock crashed the process (seen as a segfault in a later lmdb.open)."""

from __future__ import annotations

import threading
from pathlib import Path

from eventstore.storage import open_shared_env, release_shared_env
from eventstore.storage.files import overwrite_int_file, read_int_file


def test_a_reopen_waits_for_the_thread_using_the_old_environment(tmp_path: Path) -> None:
    shared = open_shared_env(tmp_path / "env", (b"d",), sync=False)
    try:
        inside, leave, reopened = threading.Event(), threading.Event(), threading.Event()
        seen: dict[str, object] = {}

        def user() -> None:
            with shared.operation() as env:
                inside.set()
                leave.wait(10)
                with env.begin(write=True) as txn:  # the old environment is still open
                    txn.put(b"k", b"v", db=shared.dbs[b"d"])
                seen["user_env"] = env

        def other() -> None:
            with shared.operation() as env:
                seen["other_env"] = env
                reopened.set()

        first = threading.Thread(target=user)
        first.start()
        assert inside.wait(10)
        generation = tmp_path / "env" / "generation"
        overwrite_int_file(generation, read_int_file(generation) + 1)  # as a purge bumps it
        second = threading.Thread(target=other)
        second.start()
        assert not reopened.wait(0.3)  # it waits: the first thread is inside
        leave.set()
        first.join(10)
        assert reopened.wait(10)
        second.join(10)
        assert seen["other_env"] is not seen["user_env"]  # reopened after the first left
        with shared.operation() as env, env.begin() as txn:
            assert txn.get(b"k", db=shared.dbs[b"d"]) == b"v"
    finally:
        release_shared_env(shared)
