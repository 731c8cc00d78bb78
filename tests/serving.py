"""A test's HTTP server served on a daemon thread that stops at once when asked.

``serve_forever`` looks for a shutdown request between waits of ``poll_interval`` (half a
second by default), so ``shutdown()`` waits up to that long: over the hundreds of servers
the suite starts and stops, about a minute of doing nothing. A short wait costs a wake-up
now and then while the server runs.
"""

from __future__ import annotations

import threading
from socketserver import BaseServer

POLL_S = 0.01


def serve(httpd: BaseServer) -> None:
    """Start ``httpd`` serving on a daemon thread; ``httpd.shutdown()`` stops it."""
    threading.Thread(target=httpd.serve_forever, args=(POLL_S,), daemon=True).start()
