"""The ``memlog`` command line: one module per concern (:mod:`.sessions`,
:mod:`.entries`, :mod:`.read`, :mod:`.privacy`, :mod:`.audit`, :mod:`.admin`,
:mod:`.demo`), assembled in :mod:`.main`; :mod:`.base` holds what they share
and :mod:`.render` the human text."""

from .main import cli, main

__all__ = ["cli", "main"]
