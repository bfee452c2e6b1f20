# A student's server on the classroom hub (JUPYTER_CONFIG_PATH puts this folder first for students;
# jupyter_server_config.json beside it chooses nbgrader's tools).
#
# A Content-Security-Policy on every page: no script that a notebook's Markdown or outputs put into the page runs
# (jupyterlab-myst renders a shared notebook's `{iframe} javascript:...` as a live frame), and frames come only from
# this server. The same policy as the learners' and the instructors' JupyterLab: lab/normlab_csp.py.
import os
import sys

c = get_config()  # noqa: F821 - provided by traitlets when it loads this file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "lab"))   # lab/, for normlab_csp
import normlab_csp  # noqa: E402

normlab_csp.configure(c)
# The learners' notary (lab/normlab_notary.py, enabled in jupyter_server_config.d/): a notebook a student ran and
# saved opens trusted again, so its live views come back after a reload or in a second tab.
