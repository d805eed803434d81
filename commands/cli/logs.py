"""structlog setup for the CLI entry point (a library never configures logging).

Logs go to stderr as JSON lines (``MEMLOG_LOG=json``) or as short key=value
lines. They name ids and counts, never memory content.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from eventstore.logs import configure_on_first_log

__all__ = ["configure_logging"]

def configure_logging(verbose: bool = False) -> None:
    """Configure structlog for the CLI process, when the first event at the
    level in force is logged (:mod:`eventstore.logs`): structlog, and with it
    asyncio, is imported only by a command that logs."""
    level = logging.DEBUG if verbose else _level_from_env()
    configure_on_first_log(lambda: _configure(level), level)


def _configure(level: int) -> None:
    """structlog's configuration: JSON lines or key=value lines on stderr."""
    import msgspec
    import structlog

    json = msgspec.json.Encoder(enc_hook=repr)
    renderer: Any
    if os.environ.get("MEMLOG_LOG", "").lower() == "json":
        renderer = structlog.processors.JSONRenderer(serializer=lambda obj, **_: json.encode(obj))
        factory: Any = structlog.BytesLoggerFactory(sys.stderr.buffer)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=False)
        factory = structlog.PrintLoggerFactory(sys.stderr)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=factory,
        cache_logger_on_first_use=False,
    )


def _level_from_env() -> int:
    name = os.environ.get("MEMLOG_LOG_LEVEL", "WARNING").upper()
    return int(getattr(logging, name, logging.WARNING))
