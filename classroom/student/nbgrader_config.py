# A student's nbgrader settings on the classroom hub (JUPYTER_CONFIG_PATH puts this folder first for students).
# Students have no course folder: the exchange is all they need, and the hub's spawner names it.
import os

c = get_config()  # noqa: F821 - provided by traitlets when it loads this file
c.Exchange.root = os.environ.get("NORMLAB_EXCHANGE", "/usr/local/share/nbgrader/exchange")
