"""The write side: validation to events, the MemoryLog facade and the CLI."""

__all__: list[str] = []
