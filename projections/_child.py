"""How the projections start a helper process (the vector worker, a shard
rebuild's document maker): ``python -P -c CODE ARGS`` with the parent's module
path, so the working directory (an agent's repository may hold a module of
the same name as one of memlog's) is not searched first, and without the
purge's failpoints (the crash tests count the parent's steps only)."""

from __future__ import annotations

import os
import sys

__all__ = ["child_argv", "child_env"]


def child_argv(code: str, *args: str) -> list[str]:
    """The command line running ``code`` with ``args`` in ``sys.argv[1:]``."""
    return [sys.executable, "-P", "-c", code, *args]


def child_env() -> dict[str, str]:
    """The environment of a helper process: the parent's, with its module path
    and no ``MEMLOG_CRASH_*`` failpoints."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMLOG_CRASH")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env
