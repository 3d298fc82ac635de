"""The server's listening socket, bound before anything else starts: a port that is taken
fails ``serve`` at once with a message that says so, instead of after the notebooks opened
(while a client waiting on that port may hang on whatever else answers there)."""

from __future__ import annotations

import errno
import socket

from ..errors import InvalidInput


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``; :class:`InvalidInput` naming the fix if it cannot."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=2048)
    except OSError as err:
        if err.errno == errno.EADDRINUSE:
            raise InvalidInput(
                f"port {port} on {host} is in use (another 'agent-notebook serve', or another "
                f"program): stop it, or serve on a free port with --port"
            ) from None
        raise InvalidInput(
            f"cannot listen on {host}:{port} ({err.strerror or err}): choose another --host "
            "or --port"
        ) from None
