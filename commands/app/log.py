"""Library logging: silent until the application configures structlog.

An unconfigured structlog prints everything to stdout, which would pollute a
caller's output; the library only logs once someone (the CLI entry point, or
the embedding application) has configured it. Events carry ids, never content.
structlog itself is imported by whoever configures it, not here (see
:mod:`eventstore.logs`, the switch every layer shares).
"""

from __future__ import annotations

import logging
from typing import Any

from eventstore.logs import logger

__all__ = ["debug", "info", "warning"]


def info(event: str, **ids: Any) -> None:
    """Log at info level when logging is configured."""
    found = logger("memlog", logging.INFO)
    if found is not None:
        found.info(event, **ids)


def debug(event: str, **ids: Any) -> None:
    """Log at debug level when logging is configured."""
    found = logger("memlog", logging.DEBUG)
    if found is not None:
        found.debug(event, **ids)


def warning(event: str, **ids: Any) -> None:
    """Log at warning level when logging is configured."""
    found = logger("memlog", logging.WARNING)
    if found is not None:
        found.warning(event, **ids)
