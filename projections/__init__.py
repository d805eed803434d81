"""Read models rebuilt from the event log."""

__all__: list[str] = []
