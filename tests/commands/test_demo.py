"""The README's demo command works in a fresh directory, as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_demo_runs_in_a_fresh_directory(tmp_path: Path) -> None:
    """`memlog demo` records, searches, prints context and stats, and redacts the email."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    exe = Path(sys.executable).with_name("memlog")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "commands"]
    result = subprocess.run([*cmd, "demo"], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for words in ("session", "decision", "$ memlog search", "## MEMORY CONTEXT", "chain verified: True"):
        assert words in out
    assert "alice@example.com" not in out
    result = subprocess.run([*cmd, "--json", "demo"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=120, check=False)
    data = json.loads(result.stdout)
    assert data["verified"] and "[REDACTED]" in data["redacted_message"]
    assert data["stats"]["entries"] >= 9
