# The instructors' JupyterLab (scripts/lab.py --instructor puts this folder first on JUPYTER_CONFIG_PATH; the
# instructor's server on the classroom hub loads it too).
#
# A Content-Security-Policy on every page the server sends (lab/normlab_csp.py). JupyterLab's pages run no inline
# script but the server's own (by hash) and frame nothing from elsewhere, so a submitted notebook whose Markdown
# asks for a `javascript:` or `data:` frame (jupyterlab-myst renders it) runs nothing. Formgrader shows students'
# work on this server's origin too; the grader makes submissions inert before they reach autograded/
# (normlab_grading/inert.py), and its pages get a policy that is the second wall: no plugin objects, no <base> or
# form that points elsewhere, nothing loaded from or sent to another host (scripts, images, fonts, fetches,
# frames), and no page of this server framed by another site. That one cannot forbid inline scripts: Formgrader's
# own pages are inline scripts with values filled in, and MathJax 2 evaluates code. jupyter_server still adds
# `sandbox allow-scripts` to the files it serves raw (/files/...).
import os
import sys

c = get_config()  # noqa: F821 - provided by traitlets when it loads this file

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # lab/, for normlab_csp
import normlab_csp  # noqa: E402

normlab_csp.configure(c, formgrader=True)
