# The instructors' JupyterLab (scripts/lab.py --instructor puts this folder first on JUPYTER_CONFIG_PATH).
#
# A Content-Security-Policy on every page the server sends. Formgrader shows students' work on this server's
# origin, so a script in a submission would act with the instructor's session. The grader makes submissions inert
# before they reach autograded/ (normlab_grading/inert.py); this header is the second wall: no plugin objects, no
# <base> or form that points elsewhere, nothing loaded from or sent to another host (scripts, images, fonts,
# fetches, frames), and no page of this server framed by another site. It cannot forbid inline scripts:
# Formgrader's own pages and JupyterLab's page configuration are inline scripts, and MathJax 2 evaluates code.
# jupyter_server still adds `sandbox allow-scripts` to the files it serves raw (/files/...).
c = get_config()  # noqa: F821 - provided by traitlets when it loads this file

CSP = "; ".join([
    "default-src 'self'",
    "script-src 'self' 'unsafe-inline' 'unsafe-eval'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "media-src 'self' data: blob:",
    "worker-src 'self' blob:",
    "frame-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'self'",
])
c.ServerApp.tornado_settings = {"headers": {"Content-Security-Policy": CSP}}


