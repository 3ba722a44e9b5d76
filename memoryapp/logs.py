"""Logging filters of the server log (settings.LOGGING)."""

from __future__ import annotations

import logging

# uvicorn logs a WebSocket's handshake and its open/close on its error logger, at INFO,
# even when the access log is off; they are access-log lines (one per connection event).
WEBSOCKET_ACCESS_MESSAGES = frozenset(
    {
        '%s - "WebSocket %s" [accepted]',
        '%s - "WebSocket %s" 403',
        '%s - "WebSocket %s" %d',
        "connection open",
        "connection closed",
    }
)


class WebSocketAccessFilter(logging.Filter):
    """Drops uvicorn's WebSocket handshake/open/close lines when its access log is off.

    ``--no-access-log`` leaves ``uvicorn.access`` with no handlers and no propagation;
    then these lines are dropped too, otherwise they stay as uvicorn writes them.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg not in WEBSOCKET_ACCESS_MESSAGES:
            return True
        access = logging.getLogger("uvicorn.access")
        return bool(access.handlers) or access.propagate
