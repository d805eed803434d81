"""Operations: health (:mod:`.health`) and the store's administration, decay
parameters, replay, verify and stats (:mod:`.admin`). It may import every
subpackage of :mod:`commands.app`.
"""

__all__ = [
    "admin",
    "health",
]
