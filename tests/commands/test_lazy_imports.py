"""``memlog --help`` builds the command tree without the application: no
asyncio, no MCP or LangGraph face, no use case, no structlog (checked in a
fresh process; no timing)."""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import json, runpy, sys
sys.argv = ["memlog", *sys.argv[1:]]
try:
    runpy.run_module("commands", run_name="__main__")
except SystemExit:
    pass
sys.stdout.flush()
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""

_HEAVY = ("asyncio", "mcp", "langgraph", "structlog", "commands.aio", "commands.app", "commands.mcp",
          "commands.langgraph", "commands.memory", "commands.transfer", "projections", "tantivy", "lmdb")


def _modules_after(*args: str) -> set[str]:
    result = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True,
                            timeout=120, check=True)
    assert "Usage: memlog" in result.stdout
    return set(json.loads(result.stderr.strip().splitlines()[-1]))


def _loaded(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


def test_help_imports_no_application() -> None:
    """``memlog --help`` and a command's ``--help`` import none of the heavy modules."""
    for args in (("--help",), ("search", "--help")):
        modules = _modules_after(*args)
        assert [name for name in _HEAVY if _loaded(modules, name)] == [], args


def test_the_public_names_still_import() -> None:
    """``from commands import ...`` and ``import memlog`` give the same objects, loaded on use."""
    import commands
    import memlog
    from commands import AsyncMemoryLog, MemoryLog

    assert memlog.MemoryLog is MemoryLog and memlog.AsyncMemoryLog is AsyncMemoryLog
    assert set(commands.__all__) <= set(dir(commands))
    assert all(getattr(commands, name) is not None for name in commands.__all__)
