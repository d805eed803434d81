"""The house's boundaries: imports point inward (commands -> projections ->
eventstore), and inside each package along its inner boundaries."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = {"eventstore": {"projections", "commands", "memlog"},
             "projections": {"commands", "memlog"}, "commands": {"memlog"}}


def _imports(path: Path) -> Iterator[str]:
    """The absolute module names ``path`` imports (relative imports resolved)."""
    module_name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    is_package = path.name == "__init__.py"
    package = module_name.removesuffix(".__init__") if is_package else module_name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            yield module
            yield from (f"{module}.{alias.name}" for alias in node.names)


def _offenders(files: Iterator[Path], banned: tuple[str, ...]) -> list[str]:
    out = []
    for path in files:
        out += [f"{path.relative_to(ROOT)}: {name}" for name in _imports(path)
                if any(name == b or name.startswith(b + ".") for b in banned)]
    return sorted(set(out))


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_point_inward(package: str) -> None:
    """No module of an inner package imports an outer one."""
    assert _offenders((ROOT / package).rglob("*.py"), tuple(FORBIDDEN[package])) == []


def test_the_neutral_log_names_no_backend() -> None:
    """Only the backend factory (lazily) and the LMDB subpackage itself reach eventstore.lmdb."""
    neutral = (p for p in (ROOT / "eventstore").rglob("*.py")
               if "lmdb" not in p.relative_to(ROOT / "eventstore").parts[:-1] and p.name != "factory.py")
    assert _offenders(neutral, ("eventstore.lmdb",)) == []
    factory = ast.parse((ROOT / "eventstore" / "factory.py").read_text())
    top_level = [n for n in factory.body if isinstance(n, ast.ImportFrom) and n.module == "lmdb"]
    assert top_level == []  # imported inside open_backend only


def test_the_application_imports_nothing_from_the_cli() -> None:
    """commands/app and the facade never import commands/cli."""
    files = [*(ROOT / "commands" / "app").rglob("*.py"), ROOT / "commands" / "memory.py"]
    assert _offenders(iter(files), ("commands.cli",)) == []


def test_projections_callers_use_its_faces() -> None:
    """commands imports projections only from its package face; nobody outside
    eventstore reaches its private modules or the LMDB backend's insides."""
    files = list((ROOT / "commands").rglob("*.py"))
    inner = tuple(f"projections.{p.stem if p.is_file() else p.name}"
                  for p in (ROOT / "projections").iterdir() if p.name != "__init__.py"
                  and (p.suffix == ".py" or (p / "__init__.py").exists()))
    assert _offenders(iter(files), inner) == []
    outside = [*(ROOT / "projections").rglob("*.py"), *files]
    assert _offenders(iter(outside), ("eventstore.lmdb", "eventstore.storage.files",
                                      "eventstore.storage.env", "eventstore.storage.compact")) == []


def test_the_storage_kit_is_off_the_log_face() -> None:
    """eventstore's face exports no LMDB plumbing; projections reach it through eventstore.storage."""
    import eventstore

    for name in ("SharedEnv", "MaintenanceLock", "purge_env", "wipe_tree", "open_shared_env",
                 "LmdbBackend"):
        assert name not in eventstore.__all__


def test_public_api_is_listed_in_all() -> None:
    """Each package re-exports its public names in __all__ (ruff RUF022 keeps it sorted)."""
    import commands
    import commands.app
    import eventstore
    import eventstore.storage
    import memlog
    import projections

    for module in (eventstore, eventstore.storage, projections, commands, commands.app, memlog):
        assert len(set(module.__all__)) == len(module.__all__)
        for name in module.__all__:
            assert hasattr(module, name)


# commands/app by concern, from the ground up: a subpackage imports only those
# before it (and itself), and the shared modules; the shared modules import none.
APP_LAYERS = ("resources", "store", "recording", "recall", "forgetting", "upkeep", "sessions", "audit", "ops")
APP_SHARED = ("log", "metrics", "results")


def _app_part(name: str) -> str | None:
    """The subpackage (or shared module) of commands.app that ``name`` lies in."""
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["commands", "app"] else None


def test_the_application_subpackages_import_downward() -> None:
    """Each subpackage of commands/app imports only the subpackages before it
    in APP_LAYERS, so no two import each other; the shared modules import none."""
    app = ROOT / "commands" / "app"
    found = {p.name for p in app.iterdir() if (p / "__init__.py").exists()}
    assert found == set(APP_LAYERS)
    assert {p.stem for p in app.glob("*.py")} == {"__init__", *APP_SHARED}
    wrong = []
    for path in app.rglob("*.py"):
        own = path.relative_to(app).parts[0].removesuffix(".py")
        if own == "__init__":
            continue  # the face re-exports from every subpackage
        allowed = set(APP_SHARED)
        if own not in APP_SHARED:
            allowed |= set(APP_LAYERS[: APP_LAYERS.index(own) + 1])
        wrong += [f"{path.relative_to(ROOT)}: {name}" for name in _imports(path)
                  if (part := _app_part(name)) is not None and part not in allowed]
    assert sorted(set(wrong)) == []


@pytest.mark.parametrize("subpackage", APP_LAYERS)
def test_each_application_subpackage_has_a_face(subpackage: str) -> None:
    """A subpackage's __init__ says what lives there and what it may import, and lists __all__."""
    face = ast.parse((ROOT / "commands" / "app" / subpackage / "__init__.py").read_text())
    assert ast.get_docstring(face)
    assert any(isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in n.targets)
               for n in face.body)
