"""Declining ``memlog delete``'s prompt is an abort (``E_ABORTED``), not bad input."""

from __future__ import annotations

import io
import sys

import pytest

from commands.cli import privacy
from eventstore import E_ABORTED, AbortedError, InvalidInputError


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_answering_no_raises_aborted(monkeypatch: pytest.MonkeyPatch) -> None:
    """"n" at the prompt raises AbortedError with its code and exit 1; nothing is asked with --yes."""
    monkeypatch.setattr(sys, "stdin", _Terminal("n\n"))
    monkeypatch.setattr(privacy.click, "confirm", lambda *a, **k: False)
    with pytest.raises(AbortedError) as caught:
        privacy._confirm(False, "Delete for good?")
    assert caught.value.code == E_ABORTED and caught.value.exit_code == 1
    assert not isinstance(caught.value, InvalidInputError)
    privacy._confirm(True, "Delete for good?")  # --yes: no prompt, no error
