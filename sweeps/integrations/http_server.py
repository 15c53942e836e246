"""The HTTP server ``ablate dashboard`` runs its WSGI app in: wsgiref's, one daemon thread per
connection and a time limit on every read and write of a connection.

wsgiref's own server answers one connection at a time, so one client that opens a connection and
never finishes its request (``GET / HTTP/1.1``, ``Host: x``, no blank line) held every other
request until it went away; with ``--host 0.0.0.0`` anyone on the network could. Here each
connection has its own thread, and a connection that sends nothing for ``TIMEOUT_S`` seconds
while its request is read, or takes nothing for as long while a response is written (the socket
timeout bounds each receive and each block sent, a static file going out in 8 KiB blocks), is
closed with one line on stderr, not a traceback. Daemon threads: stopping the server never waits
for a client that hangs.
"""

from __future__ import annotations

import socketserver
import sys
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import ServerHandler, WSGIRequestHandler, WSGIServer

TIMEOUT_S = 20.0
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    """wsgiref's server, a daemon thread per connection."""

    daemon_threads = True


class _ResponseHandler(ServerHandler):
    """wsgiref's response writer, to whom a client that stopped reading is one that went away."""

    def handle_error(self) -> None:
        if isinstance(sys.exc_info()[1], TimeoutError):  # as wsgiref treats a reset connection
            handler = self.request_handler
            handler.log_error("response not taken in %g s: connection closed", handler.timeout)
            return
        super().handle_error()


class TimedRequestHandler(WSGIRequestHandler):
    """wsgiref's request handler with a timeout on its connection (``StreamRequestHandler.setup``
    sets it), a request that times out or is reset while it is read closed quietly, and the app
    told that it runs threaded (``wsgi.multithread``)."""

    timeout = TIMEOUT_S

    def handle(self) -> None:
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if len(self.raw_requestline) > 65536:
                self.requestline = self.request_version = self.command = ""
                self.send_error(414)
                return
            if not self.parse_request():  # an error was sent
                return
        except TimeoutError:
            self.log_error("request not complete in %g s: connection closed", self.timeout)
            return
        except ConnectionError:
            return
        handler = _ResponseHandler(
            self.rfile, self.wfile, self.get_stderr(), self.get_environ(), multithread=True
        )
        handler.request_handler = self  # what wsgiref's handler logs the request through
        handler.run(self.server.get_app())


def threaded_server(host: str, port: int, app: WSGIApp) -> ThreadingWSGIServer:
    """A server bound to ``host:port`` (0: a free port, ``server_address`` says which) that serves
    ``app`` once ``serve_forever`` runs."""
    server = ThreadingWSGIServer((host, port), TimedRequestHandler)  # as wsgiref's make_server
    server.set_app(app)
    return server
