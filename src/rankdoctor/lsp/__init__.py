"""The language server (``rankdoctor lsp``): a failed run's logs diagnosed in the editor.

``runs.py`` chooses the files one diagnosis reads, ``work.py`` runs it in a worker process,
``marks.py`` turns its answer into marked lines, ``server.py`` speaks LSP (pygls)."""
