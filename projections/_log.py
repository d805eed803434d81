"""Projection logging: silent until the application configures structlog
(as :mod:`commands.app.log`). Events carry seqs, types, paths and error class
names, never content."""

from __future__ import annotations

from typing import Any

import structlog

__all__ = ["warning"]

_logger = structlog.get_logger("memlog.projections")


def warning(event: str, **ids: Any) -> None:
    """Log at warning level when logging is configured."""
    if structlog.is_configured():
        _logger.warning(event, **ids)
