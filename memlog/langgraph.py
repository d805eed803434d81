"""``from memlog.langgraph import MemlogStore``: LangGraph's ``BaseStore`` on a
memlog store directory (needs the extra: ``pip install "memlog[langgraph]"``).
See docs/integrations/langgraph.md."""

try:
    from commands.langgraph import DEFAULT_USER, MemlogStore, MemlogStoreAsOf
except ImportError as exc:  # pragma: no cover - only without the extra
    if exc.name is None or not exc.name.startswith("langgraph"):
        raise
    raise ImportError('memlog.langgraph needs LangGraph: pip install "memlog[langgraph]"',
                      name=exc.name) from exc

__all__ = ["DEFAULT_USER", "MemlogStore", "MemlogStoreAsOf"]
