"""What every command shares: the :class:`Context` (options, the store it
opens, output), the group that maps errors to one line, and click's choices
built from the vocabulary.

With ``--json`` each command prints one JSON document on stdout; progress and
logs go to stderr. Errors print one ``Error: ...`` line on stderr and exit
non-zero; nothing is written.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NoReturn

import click
import msgspec

from eventstore import (
    E_ABORTED,
    E_INTERNAL,
    E_USAGE,
    ENTRY_KINDS,
    INTERNAL_EXIT_CODE,
    LEVELS,
    ROLES,
    SEARCH_MODES,
    SEARCH_SOURCES,
    SORTS,
    InvalidInputError,
    MemlogError,
    SizeLimitError,
    StorageError,
    UsageError,
)
from eventstore.factory import is_remote

from .oserrors import storage_cause, translate_os_error

if TYPE_CHECKING:  # the application is imported when a command runs, not for --help
    from ..memory import MemoryLog

__all__ = ["KINDS", "LEVEL", "MODE", "PATTERN", "ROLE", "SORT", "SOURCE", "STDIN_LIMIT", "Context",
           "LazyChoice", "MemlogGroup", "escape_controls", "pass_context", "stdin_value"]


class LazyChoice(click.Choice[str]):
    """A :class:`click.Choice` whose choices come from the application: they are
    loaded when first needed (a command's help, parsing, completion), so that
    building the command tree imports none of it."""

    def __init__(self, load: Callable[[], Sequence[str]]) -> None:
        self._load = load
        self._loaded: tuple[str, ...] | None = None
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:
        """The choices, loaded on first use."""
        if self._loaded is None:
            self._loaded = tuple(self._load())
        return self._loaded

    @choices.setter
    def choices(self, value: Sequence[str]) -> None:
        self._loaded = tuple(value)


def _patterns() -> Sequence[str]:
    from ..app import PATTERNS
    return tuple(PATTERNS)


def escape_controls(text: str, keep: str = "") -> str:
    """The application's escaping of control characters (imported on first use)."""
    from ..app.audit.reports import escape_controls as escape
    return escape(text, keep=keep)

KINDS = click.Choice(ENTRY_KINDS)
ROLE = click.Choice(ROLES)
LEVEL = click.Choice(LEVELS)
SORT = click.Choice(SORTS)
SOURCE = click.Choice(SEARCH_SOURCES)
MODE = click.Choice(SEARCH_MODES)
PATTERN = LazyChoice(_patterns)

_json = msgspec.json.Encoder()


class Context:
    """Options shared by every command, and the store they open."""

    def __init__(self, data_dir: Path, as_json: bool, read_only: bool = False, *,
                 log: str | None = None) -> None:
        self.data_dir = data_dir
        self.json = as_json
        self.read_only = read_only
        self.log = log  # --log: a shared nats:// log, else the log in data_dir

    @property
    def log_dir(self) -> Path | str:
        """Where the event log lives: inside the data directory, or ``--log``."""
        if self.log is not None and not is_remote(self.log):
            raise UsageError("--log (MEMLOG_LOG_URL) takes a nats://host:port/<stream> location")
        return self.data_dir / "log" if self.log is None else self.log

    @contextlib.contextmanager
    def memory(self, *, create: bool = True, **overrides: Any) -> Iterator[MemoryLog]:
        """Open the store for one command; a read passes ``create=False``, so a
        directory without a store is an error (``E_NO_STORE``) and nothing is created."""
        from ..app import load_settings
        from ..memory import MemoryLog
        with MemoryLog.open(self.data_dir, load_settings(self.data_dir, overrides),
                            create=create and not self.read_only, read_only=self.read_only,
                            log=self.log) as mem:
            _announce(mem)
            yield mem

    def check_dir(self, *, write: bool) -> None:
        """Refuse a ``--dir`` that is not a directory (and, for a write, one
        that cannot be written) before anything is opened."""
        from ..app.store.validate import check_data_dir
        check_data_dir(self.data_dir, write)

    def reading(self) -> contextlib.AbstractContextManager[MemoryLog]:
        """Open an existing store for a read command."""
        return self.memory(create=False)

    def write(self, action: Callable[[MemoryLog], str | None], label: str) -> None:
        """Run one write on the store and print its id and seq."""
        with self.memory() as mem:
            item = action(mem)
            seq = mem.last_seq
        self.emit({"id": item, "seq": seq}, f"{label} {item} (seq {seq})" if item else f"{label} (seq {seq})")

    def emit(self, data: Any, text: str | Callable[[], str]) -> None:
        """Print ``data`` as JSON with ``--json``, else the human text."""
        if self.json:
            click.echo(_json.encode(data).decode())
        else:
            # Control characters and bidi overrides are shown escaped; newlines and tabs lay out blocks.
            click.echo(escape_controls(text() if callable(text) else text, keep="\n\t"))


class MemlogGroup(click.Group):
    """Maps every error to one ``Error:`` line and its exit code (DESIGN section 7)."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run without click's standalone handling, so usage errors are one line too."""
        kwargs["standalone_mode"] = False
        try:
            return super().main(*args, **kwargs)
        except click.ClickException as exc:  # usage errors, bad option values
            click.echo(f"Error: {_one_line(exc.format_message())} [{E_USAGE}]", err=True)
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo(f"Error: aborted; nothing was written [{E_ABORTED}]", err=True)
            sys.exit(1)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemlogError as exc:
            precise = storage_cause(exc) if isinstance(exc, StorageError) else None
            _fail(precise or exc)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except OSError as exc:  # the machine's answer (permissions, a full disk), not a bug
            _fail(translate_os_error(exc))
        except Exception as exc:
            # A bug, not bad input: name it without echoing a message that might
            # quote content; -v shows the traceback.
            if ctx.params.get("verbose"):
                raise
            click.echo(f"Error: internal error ({type(exc).__name__}); run with -v for details "
                       f"[{E_INTERNAL}]", err=True)
            sys.exit(INTERNAL_EXIT_CODE)


def _announce(mem: MemoryLog) -> None:
    """Say on stderr what happened to purges before this command (stdout stays
    the command's own)."""
    if mem.recovered:
        click.echo(f"note: finished {len(mem.recovered)} purge(s) that a crash had interrupted", err=True)
    waiting = mem.pending_purges()
    if waiting["pending"]:
        click.echo(f"note: {waiting['pending']} purge(s) pending; run `memlog purge`", err=True)
    if waiting["running"]:
        click.echo(f"note: {waiting['running']} purge(s) running in another process", err=True)


def _fail(exc: MemlogError) -> NoReturn:
    """Print ``exc`` as one ``Error:`` line (controls escaped) and exit with its code."""
    click.echo(f"Error: {_one_line(exc.message)} [{exc.code}]", err=True)
    sys.exit(exc.exit_code)


def _one_line(message: str) -> str:
    """A message on one line: its line breaks and tabs as spaces, other controls escaped."""
    return escape_controls(" ".join(message.replace("\r", " ").replace("\t", " ").split("\n")))


# Content read from stdin is at most the largest max_content_bytes a setting allows.
STDIN_LIMIT = 64 << 20


def stdin_value(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A click callback: ``-`` reads the value from stdin (UTF-8; one trailing
    newline dropped). At most one option of a command may read stdin."""
    if value != "-":
        return value
    name = param.opts[0] if param.opts else str(param.name).upper()
    taken: list[str] = ctx.meta.setdefault("memlog.stdin", [])
    if taken:
        raise InvalidInputError(f"only one option can read stdin ('-'): {taken[0]} already does, "
                                f"so {name} cannot")
    taken.append(name)
    stream: BinaryIO = sys.stdin.buffer
    raw = stream.read(STDIN_LIMIT + 1)
    if len(raw) > STDIN_LIMIT:
        raise SizeLimitError(f"{name} from stdin is larger than {STDIN_LIMIT} bytes")
    try:
        text: str = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInputError(f"{name} from stdin is not valid UTF-8") from None
    text = text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith("\n") else text
    if not text:  # a broken pipe would otherwise store nothing for an optional field, silently
        raise InvalidInputError(f"{name} from stdin must not be empty")
    return text


pass_context = click.make_pass_decorator(Context)
