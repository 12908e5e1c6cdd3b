"""The upload limit, enforced before the app reads a byte more than allowed."""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def megabytes(n: int) -> str:
    mb = n / (1 << 20)
    if mb < 1:
        return f"{n / 1024:.0f} KB"
    return f"{mb:.0f} MB" if mb >= 10 else f"{mb:.3g} MB"


class _TooLarge(Exception):
    pass


class BodyLimit:
    """413 when a request body is larger than ``limit`` bytes: at once when its
    Content-Length says so, else as soon as the streamed body goes over."""

    def __init__(self, app: ASGIApp, limit: int):
        self.app = app
        self.limit = limit

    def _too_large(self) -> JSONResponse:
        return JSONResponse(
            {"detail": f"request body is larger than the upload limit of {megabytes(self.limit)} "
             "(start the server with --max-upload-mb to change it, or send only the selected lines)"},
            status_code=413,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                await JSONResponse({"detail": "bad Content-Length header"}, status_code=400)(scope, receive, send)
                return
            if declared > self.limit:
                await self._too_large()(scope, receive, send)
                return
        seen = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._too_large()(scope, receive, send)
