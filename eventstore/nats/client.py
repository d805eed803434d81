"""A synchronous face over nats-py's asyncio client.

A private event loop runs on a daemon thread; every call submits a coroutine
to it (:func:`asyncio.run_coroutine_threadsafe`) and waits with a timeout, so
the log's synchronous protocol can sit on top. Requests that the server
answers with "retry" (no responders, 503 temporarily unavailable, a timeout
on an idempotent request) are retried with exponential backoff until the
location's timeout has passed; then :class:`NatsUnavailableError`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import re
import threading
import time
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

import nats
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import (
    ConnectionClosedError,
    ConnectionReconnectingError,
    MaxPayloadError,
    NoRespondersError,
    OutboundBufferLimitError,
    StaleConnectionError,
)
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeout

from ..errors import NatsApiError, NatsUnavailableError, NatsUnsupportedError, SizeLimitError
from .url import NatsLocation

__all__ = ["MIN_VERSION", "NatsApiError", "NatsClient", "NatsUnavailableError", "NatsUnsupportedError",
           "clear_error", "is_transient"]

T = TypeVar("T")

# Atomic batch publish (one append = one batch) came in 2.12; 2.11 is the
# floor DESIGN section 2 set for the per-subject guarantees under replication.
MIN_VERSION = (2, 12)
# Answers that mean "retry": any 503 (temporarily unavailable, no responders, expected last
# sequence not ready, insufficient resources while a peer is down) but "not supported in
# clustered mode", 409 "duplicate message id is in process", 429 "too many inflight",
# and 500 "JetStream cluster can not handle request" (a leader election).
_RETRY_STATUS = {503, 409, 429}
ATTEMPT_TIMEOUT = 3.0
_RETRY_ERR_CODES = {10008, 10009, 10158, 10163, 10210, 10211}
_NEVER_RETRY = {10036}
_TRANSIENT = (NoRespondersError, NatsTimeout, asyncio.TimeoutError, ConnectionClosedError,
              ConnectionReconnectingError, StaleConnectionError, OutboundBufferLimitError)


def is_transient(exc: BaseException) -> bool:
    """True when ``exc`` means "retry": no responders, a timeout, a connection
    being re-established, or a JetStream answer of :data:`_RETRY_STATUS` /
    :data:`_RETRY_ERR_CODES` (never one of :data:`_NEVER_RETRY`)."""
    if isinstance(exc, _TRANSIENT):
        return True
    if isinstance(exc, NatsApiError):
        if exc.err_code in _NEVER_RETRY:
            return False
        return exc.err_code in _RETRY_ERR_CODES or exc.status in _RETRY_STATUS
    return False


def clear_error(exc: BaseException) -> BaseException:
    """The memlog error for a failure that is not a retry: a MemlogError
    subclass with a stable code (never the message's content)."""
    if isinstance(exc, NatsApiError):
        if exc.err_code in _NEVER_RETRY:
            return NatsUnsupportedError(f"the NATS server refused a request the log needs: {exc.message}")
        return exc
    if isinstance(exc, MaxPayloadError):
        return SizeLimitError("a message of the log is larger than the NATS server's max_payload")
    if isinstance(exc, NatsError):
        return NatsApiError(f"the NATS client failed: {type(exc).__name__}")
    return exc


async def _quiet(*_: Any) -> None:
    """Connection callbacks: nats-py reconnects on its own; nothing to log."""


class NatsClient:
    """One connection, its event loop thread, and retried requests."""

    def __init__(self, location: NatsLocation) -> None:
        self.location = location
        self.timeout = location.timeout
        # One request waits at most this long, then is retried (every request here is
        # idempotent): a reply lost with a dying stream leader costs seconds, not the timeout.
        self.attempt_timeout = min(self.timeout, ATTEMPT_TIMEOUT)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="memlog-nats", daemon=True)
        self._thread.start()
        try:
            self.nc: Client = self.run(self._connect())
            self.server_info: dict[str, Any] = dict(self.nc._server_info)
            check_version(str(self.server_info.get("version", "0.0.0")))
        except BaseException:
            self.close()
            raise

    async def _connect(self) -> Client:
        try:
            # Bounded: with reconnects on, nats-py would keep trying the first connect too.
            return await asyncio.wait_for(nats.connect(
                servers=list(self.location.servers), connect_timeout=min(self.timeout, 5.0),
                max_reconnect_attempts=-1, reconnect_time_wait=0.25, allow_reconnect=True,
                error_cb=_quiet, disconnected_cb=_quiet, reconnected_cb=_quiet, closed_cb=_quiet,
            ), timeout=self.timeout)
        except Exception as exc:  # nats-py raises a bare Exception or OSError on no servers
            raise NatsUnavailableError(f"cannot connect to {', '.join(self.location.servers)}: "
                                       f"{type(exc).__name__}") from None

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start ``coro`` on the client's loop; :meth:`wait` for it later."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the client's loop and wait for it."""
        return self.wait(self.submit(coro), timeout)

    def wait(self, future: concurrent.futures.Future[T], timeout: float | None = None) -> T:
        """The result of a :meth:`submit` (NatsUnavailableError if it takes too long)."""
        try:
            return future.result(timeout=(timeout or self.timeout) * 4 + 5)
        except TimeoutError:
            future.cancel()
            raise NatsUnavailableError("a NATS operation did not finish in time") from None

    def close(self) -> None:
        """Drain the connection and stop the loop (idempotent)."""
        if not self._loop.is_running():
            return
        nc = getattr(self, "nc", None)
        if nc is not None and not nc.is_closed:
            with contextlib.suppress(Exception):  # closing a broken connection: nothing left to do
                self.run(nc.close(), timeout=2.0)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5.0)
        if not self._loop.is_running():
            self._loop.close()

    # -- requests (coroutines, run on the loop) -----------------------------

    async def retry(self, attempt: Any, what: str) -> Any:
        """Await ``attempt()`` until it succeeds or the timeout passes; transient
        failures (no responders, 503, timeouts) are retried with backoff."""
        deadline = time.monotonic() + self.timeout
        delay = 0.02
        while True:
            try:
                return await attempt()
            except Exception as exc:  # classified: a retry, or a clear memlog error
                if not is_transient(exc):
                    error = clear_error(exc)
                    if error is exc:
                        raise
                    raise error from None
                failure: BaseException = exc
            if time.monotonic() + delay > deadline:
                raise NatsUnavailableError(f"{what}: the NATS servers did not answer in time "
                                           f"({type(failure).__name__})") from None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def api(self, subject: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """A JetStream API request (retried: every API call here is idempotent)."""
        data = b"" if body is None else json.dumps(body).encode()

        async def once() -> dict[str, Any]:
            msg = await self.nc.request(subject, data, timeout=self.attempt_timeout)
            return api_reply(msg)

        result: dict[str, Any] = await self.retry(once, subject.split(".", 3)[2].lower())
        return result

    async def publish(self, subject: str, data: bytes, headers: dict[str, str]) -> dict[str, Any]:
        """A JetStream publish with a ``Nats-Msg-Id`` (so a retry is deduplicated)."""
        async def once() -> dict[str, Any]:
            msg = await self.nc.request(subject, data, timeout=self.attempt_timeout, headers=headers)
            return api_reply(msg)

        result: dict[str, Any] = await self.retry(once, "publish")
        return result

    async def direct_batch(self, stream: str, request: dict[str, Any]) -> list[Msg]:
        """A batched direct get (server >= 2.11): the messages up to the end marker."""
        msgs, _ = await self.direct_page(stream, request)
        return msgs

    async def direct_page(self, stream: str, request: dict[str, Any]) -> tuple[list[Msg], int | None]:
        """A batched direct get, and how many matching messages follow it (the
        end marker's ``Nats-Num-Pending``; None when the server does not say)."""
        async def once() -> tuple[list[Msg], int | None]:
            inbox = self.nc.new_inbox()
            sub = await self.nc.subscribe(inbox)
            out: list[Msg] = []
            try:
                await self.nc.publish(f"$JS.API.DIRECT.GET.{stream}", json.dumps(request).encode(),
                                      reply=inbox)
                while True:
                    msg = await sub.next_msg(timeout=self.attempt_timeout)
                    headers = msg.headers or {}
                    status = headers.get("Status")
                    if status is None:
                        out.append(msg)
                    elif status in ("204", "404"):
                        pending = headers.get("Nats-Num-Pending")
                        return out, int(pending) if pending is not None and status == "204" else None
                    else:
                        raise NatsApiError(f"direct get failed with status {status}", status=int(status))
            finally:
                await sub.unsubscribe()

        result: tuple[list[Msg], int | None] = await self.retry(once, "direct get")
        return result

    def call(self, aw: Awaitable[T]) -> T:
        """Run an awaitable built from the coroutine methods above."""
        async def wrap() -> T:
            return await aw

        return self.run(wrap())


def api_reply(msg: Msg) -> dict[str, Any]:
    """The JSON body of a JetStream reply; :class:`NatsApiError` on an error."""
    status = (msg.headers or {}).get("Status")
    if status is not None and not msg.data:
        if status == "503":
            raise NoRespondersError
        raise NatsApiError(f"JetStream answered status {status}", status=int(status))
    try:
        body: dict[str, Any] = json.loads(msg.data)
    except ValueError:
        raise NatsApiError("JetStream answered something that is not JSON") from None
    error = body.get("error")
    if error:
        description = str(error.get("description", ""))
        raise NatsApiError(f"JetStream error {error.get('err_code', 0)}: {description}",
                           status=int(error.get("code", 0)), err_code=int(error.get("err_code", 0)),
                           description=description)
    return body


def check_version(version: str) -> None:
    """Refuse a server older than :data:`MIN_VERSION`."""
    match = re.match(r"v?(\d+)\.(\d+)", version.strip())
    found = (int(match.group(1)), int(match.group(2))) if match else (0, 0)
    if found < MIN_VERSION:
        raise NatsUnsupportedError(
            f"NATS server {version} is too old for the memlog log: it needs {MIN_VERSION[0]}."
            f"{MIN_VERSION[1]} or newer (2.12 brought the atomic batch publish every append uses; "
            "servers before 2.11 also let several writers win one expected sequence under replication)")
