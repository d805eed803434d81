"""Imports point inward only: commands -> projections -> eventstore."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {"eventstore": {"projections", "commands"}, "projections": {"commands"}}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_point_inward(package: str) -> None:
    """No module of an inner package imports an outer one."""
    offenders = []
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names
                          if n.split(".")[0] in FORBIDDEN[package]]
    assert offenders == []


def test_public_api_is_listed_in_all() -> None:
    """Each package re-exports its public names in __all__ (ruff RUF022 keeps it sorted)."""
    import commands
    import eventstore
    import projections

    for module in (eventstore, projections, commands):
        assert len(set(module.__all__)) == len(module.__all__)
        for name in module.__all__:
            assert hasattr(module, name)
