"""What the server admits, so that no request and no crowd of requests can make it grow
or stall: the size of one body, the bytes of all bodies being received at once (they
are streamed to disk, but disk is finite too), how long headers and body chunks may
take to arrive, and the limits the diagnosis pool applies (``pool.py``)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol


def megabytes(n: int) -> str:
    mb = n / (1 << 20)
    if mb < 1:
        return f"{n / 1024:.0f} KB"
    return f"{mb:.0f} MB" if mb >= 10 else f"{mb:.3g} MB"


def _default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 4))


@dataclass(frozen=True)
class Limits:
    """Every limit of one server. The first four are ``rankdoctor serve`` options."""

    max_upload_bytes: int = 200 << 20  # one request body (--max-upload-mb): 413 above it
    max_inflated_bytes: int = 1 << 30  # what one request's .gz/.zst parts may inflate to (--max-inflated-mb): 413
    request_timeout: float = 60.0  # one diagnosis's time budget (--request-timeout); over it: 503, its worker is killed
    workers: int = _default_workers()  # diagnosis processes (--workers)
    max_buffered_bytes: int = 0  # bodies of all requests in flight together (on disk): 503 above it (0: twice max_upload_bytes)
    max_pending: int = 0  # diagnoses running or waiting for a worker: 503 above it (0: 16 per worker)
    read_timeout: float = 10.0  # a request's headers, and each piece of its body, must arrive within this (else the connection is closed / 408)

    def __post_init__(self) -> None:
        for name in ("max_upload_bytes", "max_inflated_bytes", "request_timeout", "workers", "read_timeout"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name.replace('_', ' ')} must be above 0, not {getattr(self, name)}")

    @property
    def buffered_bytes(self) -> int:
        return self.max_buffered_bytes or 2 * self.max_upload_bytes

    @property
    def pending(self) -> int:
        return self.max_pending or 16 * self.workers


class _Refused(Exception):
    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None):
        super().__init__(detail)
        self.response = JSONResponse({"detail": detail}, status_code=status, headers=headers)


class BodyLimit:
    """Admission of request bodies. 413 when one body is larger than ``max_upload_bytes``;
    503 when admitting it would put more than ``buffered_bytes`` of bodies in flight across
    all requests (a declared Content-Length is reserved whole before a byte is read, a
    chunked body as it arrives); 408 when the body stops coming for ``read_timeout``."""

    def __init__(self, app: ASGIApp, limits: Limits):
        self.app = app
        self.limits = limits
        self.in_flight = 0  # bytes reserved by requests now being received or served

    def _too_large(self) -> _Refused:
        return _Refused(
            413,
            f"request body is larger than the upload limit of {megabytes(self.limits.max_upload_bytes)} "
            "(start the server with --max-upload-mb to change it, or send only the selected lines)",
        )

    def _reserve(self, n: int) -> None:
        if self.in_flight + n > self.limits.buffered_bytes:
            raise _Refused(
                503,
                f"server busy: {megabytes(self.in_flight)} of uploads are already in flight "
                f"(at most {megabytes(self.limits.buffered_bytes)} at once); retry in a moment",
                {"Retry-After": "2"},
            )
        self.in_flight += n

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        reserved = 0
        started = False
        try:
            length = headers.get(b"content-length")
            declared = None
            if length is not None:
                try:
                    declared = int(length)
                except ValueError:
                    raise _Refused(400, "bad Content-Length header") from None
                if declared > self.limits.max_upload_bytes:
                    raise self._too_large()
                self._reserve(declared)
                reserved = declared
            seen = 0
            body_done = False

            async def limited_receive() -> Message:
                nonlocal seen, reserved, body_done
                if body_done:  # what follows the body is a wait for the client to go away: no deadline
                    return await receive()
                try:
                    message = await asyncio.wait_for(receive(), self.limits.read_timeout)
                except asyncio.TimeoutError:
                    raise _Refused(408, f"the request body stopped arriving (nothing for {self.limits.read_timeout:g} s)") from None
                if message["type"] == "http.request":
                    body_done = not message.get("more_body", False)
                    seen += len(message.get("body", b""))
                    if seen > self.limits.max_upload_bytes:
                        raise self._too_large()
                    if seen > reserved:  # chunked, or more than declared
                        self._reserve(seen - reserved)
                        reserved = seen
                return message

            async def tracking_send(message: Message) -> None:
                nonlocal started
                if message["type"] == "http.response.start":
                    started = True
                await send(message)

            await self.app(scope, limited_receive, tracking_send)
        except _Refused as refused:
            if not started:
                await refused.response(scope, receive, send)
        finally:
            self.in_flight -= reserved


class HeaderTimeoutH11(H11Protocol):
    """uvicorn's h11 protocol with a deadline for a request's headers. uvicorn's own
    keep-alive timer stops at the first byte of a request, so a client that sends a
    header byte a minute would hold its connection (and a slot of ``limit_concurrency``)
    forever. ``read_timeout`` is set by ``app.serve``."""

    read_timeout: float = Limits.read_timeout

    def connection_made(self, transport) -> None:  # type: ignore[no-untyped-def]
        super().connection_made(transport)
        self._arm_header_deadline()

    def _arm_header_deadline(self) -> None:
        waiting_after = self.cycle  # the request before the one whose headers we wait for

        def expired() -> None:
            if self.cycle is waiting_after and not self.transport.is_closing():
                self.transport.close()  # no complete request head in time

        self._header_deadline = self.loop.call_later(self.read_timeout, expired)

    def on_response_complete(self) -> None:
        self._header_deadline.cancel()
        self._arm_header_deadline()  # before super(): it may start a pipelined request at once
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._header_deadline.cancel()
        super().connection_lost(exc)
