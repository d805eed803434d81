"""A read that names an archived session restores it, when ``auto_restore`` is on.

The transcript, the context and a search with a session call
:func:`restore_on_read` before they read; a read-only store skips it.
"""

from __future__ import annotations

from eventstore import SessionRestored

from .. import log as _log
from ..store.store import Store

__all__ = ["RESTORED_ON_READ", "restore_on_read"]

# the reason of an automatic restore by a read (seed 000)
RESTORED_ON_READ = "auto-restore: a read named the archived session"


def restore_on_read(store: Store, session_id: str) -> bool:
    """Restore an archived session a read names (transcript, context, search
    with a session) when ``auto_restore`` is on; a read-only store skips it
    (the read goes on as it is). True when it restored."""
    if not store.settings.auto_restore or store.read_only:
        return False
    with store.read() as views:
        view = views.session(session_id)
    if view is None or not view.archived:
        return False
    store.writer.append(f"session:{session_id}",
                        lambda: [SessionRestored(session_id=session_id, reason=RESTORED_ON_READ)])
    _log.info("archived session restored by a read", session_id=session_id)
    return True
