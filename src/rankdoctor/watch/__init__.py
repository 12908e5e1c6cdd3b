"""``rankdoctor watch``: diagnose a live run as it happens.

``Watcher(paths, ...)`` follows growing logs (files, torchrun ``--log-dir`` trees, stdin),
scans only the appended bytes and makes an ``Update`` whenever the diagnosis, a rank's
silence or an input changes; iterate over it, or ``subscribe`` a callback. ``live`` prints
the updates (a Rich live view on a terminal, plain lines or JSON lines otherwise). See
README.md beside this file.
"""

from .core import RankLife, Reason, Update, Watcher

__all__ = ["RankLife", "Reason", "Update", "Watcher"]
