"""Library logging: silent until the application configures structlog.

An unconfigured structlog prints everything to stdout, which would pollute a
caller's output; the library only logs once someone (the CLI entry point, or
the embedding application) has configured it. Events carry ids, never content.
"""

from __future__ import annotations

from typing import Any

import structlog

__all__ = ["debug", "info", "warning"]

_logger = structlog.get_logger("memlog")


def info(event: str, **ids: Any) -> None:
    """Log at info level when logging is configured."""
    if structlog.is_configured():
        _logger.info(event, **ids)


def debug(event: str, **ids: Any) -> None:
    """Log at debug level when logging is configured."""
    if structlog.is_configured():
        _logger.debug(event, **ids)


def warning(event: str, **ids: Any) -> None:
    """Log at warning level when logging is configured."""
    if structlog.is_configured():
        _logger.warning(event, **ids)
