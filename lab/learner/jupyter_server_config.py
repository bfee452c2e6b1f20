# The learners' JupyterLab (scripts/lab.py puts this folder first on JUPYTER_CONFIG_PATH; the JupyterLab tests and
# `make bench` start their server with it too). jupyter_server_config.json beside it turns nbgrader's tools off.
#
# Kernel messages reach the browser without waiting for Nagle's algorithm. An explorable's move is a short burst
# of small websocket messages (the kernel's status, the comm message with the frame, the status again). Without
# TCP_NODELAY the server holds each small write until the browser acknowledges the previous one, and browsers
# delay their acknowledgements, so every round trip picked up tens of milliseconds here (tornado's
# WebSocketHandler.set_nodelay documents the effect). The messages themselves are unchanged.
import os
import sys

from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # lab/: normlab_csp, normlab_notary
import normlab_csp  # noqa: E402


class NoDelayKernelConnection(ZMQChannelsWebsocketConnection):
    """jupyter_server's kernel websocket connection, with TCP_NODELAY set on the browser's socket."""

    def connect(self):
        self.websocket_handler.set_nodelay(True)
        return super().connect()


c = get_config()  # noqa: F821 - provided by traitlets when it loads this file
c.ServerApp.kernel_websocket_connection_class = NoDelayKernelConnection

# A Content-Security-Policy on every page: no script that a notebook's Markdown or outputs put into the page runs,
# and frames come only from this server (lab/normlab_csp.py says why, and what each part allows).
normlab_csp.configure(c)

# Kernels whose notebook was closed keep running in JupyterLab (closing a tab does not shut its kernel down), and a
# tour of the book left a dozen of them holding memory. A kernel with no browser connected that has been idle for
# 30 minutes is shut down; a connected kernel, or one still running a cell (a long train()), is left alone.
c.MappingKernelManager.cull_idle_timeout = 1800
c.MappingKernelManager.cull_interval = 300
c.MappingKernelManager.cull_connected = False
c.MappingKernelManager.cull_busy = False
