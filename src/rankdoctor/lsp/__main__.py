"""``python -m rankdoctor.lsp``: the same server as ``rankdoctor lsp``."""

from .server import serve_stdio

if __name__ == "__main__":
    serve_stdio()
