"""What the JupyterLab tests count as a server traceback (lab_support.server_tracebacks): every traceback but the
one tornado logs when a page closed its websocket while a kernel message was being written to it."""

from __future__ import annotations

from lab_support import server_tracebacks

CLOSED = "\n".join([
    "[I 2026-12-02 19:49:19.016 LabApp] Build is up to date",
    "Task exception was never retrieved",
    "future: <Task finished name='Task-9370' coro=<WebSocketProtocol13.write_message.<locals>.wrapper() done, "
    "defined at /x/tornado/websocket.py:1138> exception=WebSocketClosedError()>",
    "Traceback (most recent call last):",
    '  File "/x/tornado/websocket.py", line 1140, in wrapper',
    "    await fut",
    "tornado.iostream.StreamClosedError: Stream is closed",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    '  File "/x/tornado/websocket.py", line 1142, in wrapper',
    "    raise WebSocketClosedError()",
    "tornado.websocket.WebSocketClosedError",
    "[I 2026-12-02 19:49:31.065 ServerApp] Adapting from protocol version 5.3 to 5.4 (client).",
    ""])

HANDLER = """[E 2026-12-02 19:49:20.000 ServerApp] Uncaught exception GET /api/contents/x
    Traceback (most recent call last):
      File "/x/jupyter_server/base/handlers.py", line 10, in get
        raise ValueError("bad")
    ValueError: bad
"""


def test_a_websocket_closed_by_its_page_is_not_a_failure():
    assert server_tracebacks(CLOSED) == []


def test_every_other_traceback_still_is():
    assert len(server_tracebacks(HANDLER)) == 1
    assert len(server_tracebacks(CLOSED + HANDLER)) == 1
    # the same tornado lines around another error: still a failure
    other = CLOSED.replace("tornado.websocket.WebSocketClosedError\n", "RuntimeError: the kernel died\n")
    assert len(server_tracebacks(other)) == 2
