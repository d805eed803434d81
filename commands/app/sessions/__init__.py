"""Sessions and agents: start, read, list, close, archive, restore
(:mod:`.lifecycle`; its names are this face's) and agent registrations
(:mod:`.agents`). It may import every subpackage of :mod:`commands.app` but
``audit`` and ``ops``.
"""

from .lifecycle import (
    RESTORED_ON_READ,
    archive_session,
    check_manifest,
    close_session,
    restore_on_read,
    restore_session,
    session,
    sessions,
    start_session,
    transcript,
    update_session,
)

__all__ = [
    "RESTORED_ON_READ",
    "archive_session",
    "check_manifest",
    "close_session",
    "restore_on_read",
    "restore_session",
    "session",
    "sessions",
    "start_session",
    "transcript",
    "update_session",
]
