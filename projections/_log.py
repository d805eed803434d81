"""Projection logging: silent until the application configures structlog
(as :mod:`commands.app.log`; the switch is :mod:`eventstore.logs`). Events
carry seqs, types, paths and error class names, never content."""

from __future__ import annotations

import logging
from typing import Any

from eventstore.logs import logger

__all__ = ["warning"]


def warning(event: str, **ids: Any) -> None:
    """Log at warning level when logging is configured."""
    found = logger("memlog.projections", logging.WARNING)
    if found is not None:
        found.warning(event, **ids)
