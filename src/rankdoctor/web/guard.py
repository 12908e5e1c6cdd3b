"""Only this machine's own pages may drive the server.

A page on any other site can still reach a server on 127.0.0.1: through DNS rebinding
(its own host name made to resolve to 127.0.0.1: the browser then sends that name as
``Host``) or with "simple" cross-origin POSTs (``text/plain``, multipart), which browsers
send without asking first. So:

* the ``Host`` header must name this server: a loopback name or address, the ``--host``
  it was started with, or (when that is a wildcard such as 0.0.0.0) an IP literal,
  which no rebinding can produce;
* a request that changes or computes anything (any method but GET/HEAD/OPTIONS) from a
  browser must be same-origin (``Origin``, ``Sec-Fetch-Site``) and carry this server
  run's token, which only its own pages know (``X-Rankdoctor-Token``). Clients that are
  not browsers (curl, scripts) send neither header and need no token: no web page can
  send a request without them;
* every response carries a Content-Security-Policy, ``X-Frame-Options``, ``nosniff`` and
  friends, so the pages cannot be framed, sniffed or made to load anything foreign.
"""

from __future__ import annotations

import ipaddress
import secrets
from urllib.parse import urlsplit

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_HEADER = "X-Rankdoctor-Token"
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
LOOPBACK_NAMES = {"localhost", "localhost.localdomain"}
WILDCARDS = {"0.0.0.0", "::", ""}
# style-src-attr: the report's confidence bar is sized by a style attribute
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


def _hostname(value: str) -> str | None:
    """The host part of a Host header or an origin's netloc (brackets of IPv6 removed)."""
    try:
        parts = urlsplit("//" + value)
        _ = parts.port  # raises on a bad port
    except ValueError:
        return None
    return parts.hostname


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


class Guard:
    """Refuses (403, one line) what another site could make a browser send, and adds the
    security headers to every response."""

    def __init__(self, app: ASGIApp, bind_host: str, token: str):
        self.app = app
        self.bind_host = bind_host.strip("[]").lower()
        self.token = token

    def host_allowed(self, name: str) -> bool:
        ip = _ip(name)
        if name in LOOPBACK_NAMES or name.endswith(".localhost") or (ip is not None and ip.is_loopback):
            return True
        if self.bind_host in WILDCARDS:
            return ip is not None
        return name == self.bind_host

    def refusal(self, scope: Scope) -> str | None:
        """Why this request is refused, or None."""
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers") or []}
        host = headers.get("host", "")
        name = _hostname(host)
        if not name or not self.host_allowed(name):
            return (
                f"Host {host!r} is not this server: only localhost, 127.0.0.1, [::1] and the --host it was started with "
                "are accepted (a web page that made its own name point here is refused)"
            )
        if scope["method"] in SAFE_METHODS:
            return None
        origin = headers.get("origin")
        if origin is not None:
            o = urlsplit(origin)
            if o.scheme not in ("http", "https") or o.netloc.lower() != host.lower():
                return f"cross-origin request refused: Origin {origin!r} is not this server"
        site = headers.get("sec-fetch-site")
        if site is not None and site != "same-origin":
            return f"cross-site request refused (Sec-Fetch-Site: {site})"
        from_browser = origin is not None or site is not None
        if from_browser and not secrets.compare_digest(headers.get(TOKEN_HEADER.lower(), ""), self.token):
            return f"request refused: it lacks this server's session token ({TOKEN_HEADER}); reload the page"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        reason = self.refusal(scope)
        if reason is not None:
            await JSONResponse({"detail": reason}, status_code=403)(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)
