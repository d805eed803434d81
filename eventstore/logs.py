"""The library's logging switch, shared by every layer: silent until the
application configures structlog. Events carry ids, never content.

structlog is not imported here: a process that never imported it has not
configured it, so there is nothing to log to. An entry point that wants logs
but not structlog's import cost at start (the CLI) hands its configuration to
:func:`configure_on_first_log`, which runs it before the first event at or
above its level.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["configure_on_first_log", "logger"]


_pending: tuple[Callable[[], None], int] | None = None
_configuring = threading.Lock()


def configure_on_first_log(configure: Callable[[], None], level: int) -> None:
    """Run ``configure`` (which imports and configures structlog) when the first
    event at ``level`` or above is logged; events below it are dropped. In a
    process that has imported structlog already (an embedding application, a
    test), ``configure`` runs now, as an eager configuration would."""
    global _pending
    with _configuring:
        _pending = None if "structlog" in sys.modules else (configure, level)
    if _pending is None:
        configure()


def logger(name: str, level: int) -> Any | None:
    """structlog's logger ``name`` for an event at ``level`` when logging is
    configured (running a deferred configuration first), else None."""
    global _pending
    if _pending is not None:
        with _configuring:
            if _pending is not None:
                configure, threshold = _pending
                if level < threshold:
                    return None
                configure()
                _pending = None
    structlog = sys.modules.get("structlog")
    if structlog is None or not structlog.is_configured():
        return None
    return structlog.get_logger(name)
