"""``from memlog.langgraph import MemlogStore``: LangGraph's ``BaseStore`` on a
memlog store directory (needs the extra: ``pip install memlog[langgraph]``)."""

from commands.langgraph import DEFAULT_USER, MemlogStore, MemlogStoreAsOf

__all__ = ["DEFAULT_USER", "MemlogStore", "MemlogStoreAsOf"]
