# The classroom hub: JupyterHub on 127.0.0.1 with one instructor and a class of students, each a Unix account of
# its own (`make classroom`, `make test-classroom`; book/instructors.md, "Running it for a class").
#
# scripts/classroom.py creates the accounts, the exchange and the instructor's course folder, writes the
# settings this file reads (a JSON file named by NORMLAB_CLASSROOM: ports, names, paths) and starts
# `jupyterhub -f classroom/jupyterhub_config.py` as root. Root is needed by the spawner, which starts each
# user's server under that user's own uid, so that a student's files stay their own.
import json
import os

c = get_config()  # noqa: F821 - provided by traitlets when it loads this file

with open(os.environ["NORMLAB_CLASSROOM"], encoding="utf-8") as fh:
    S = json.load(fh)
HERE = os.path.dirname(os.path.abspath(__file__))

# -- network: everything on the loopback interface ------------------------------------------------------
c.JupyterHub.bind_url = f"http://127.0.0.1:{S['port']}/"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{S['hub_port']}"
# The proxy is configurable-http-proxy from npm (classroom/package.json and its lock file; `make classroom-deps`).
c.ConfigurableHTTPProxy.command = [os.path.join(HERE, "node_modules", ".bin", "configurable-http-proxy")]
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{S['proxy_api_port']}"
c.ConfigurableHTTPProxy.auth_token = S["proxy_token"]

# -- the hub's own files --------------------------------------------------------------------------------
c.JupyterHub.db_url = f"sqlite:///{os.path.join(S['state'], 'jupyterhub.sqlite')}"
c.JupyterHub.cookie_secret_file = os.path.join(S["state"], "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = os.path.join(S["state"], "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True   # stopping the hub stops every user's server
c.JupyterHub.cleanup_proxy = True

# -- who may log in -------------------------------------------------------------------------------------
# The accounts' own passwords, checked by PAM (the Unix accounts the set-up created). A real deployment
# logs in through the university instead: LTI 1.3 from the learning platform or OAuth (see the guide).
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.open_sessions = False
c.Authenticator.allowed_users = set(S["students"]) | {S["instructor"]}
c.Authenticator.admin_users = set()   # nobody may open another user's server, the instructor included

# -- each user's server ---------------------------------------------------------------------------------
# LocalProcessSpawner (JupyterHub's default): `jupyterhub-singleuser` from the project's .venv, run as the
# user, in their home folder (mode 700), on a port of 127.0.0.1 of its own.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [os.path.join(S["venv_bin"], "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180
c.Spawner.args = list(S.get("server_args", []))
c.Spawner.environment = {
    "NORMLAB_EXCHANGE": S["exchange"],
    "PATH": os.pathsep.join([S["venv_bin"], "/usr/local/bin", "/usr/bin", "/bin"]),  # nbgrader runs `alembic`
    "MPLBACKEND": "Agg",
}
# No resource limits per user here: LocalProcessSpawner cannot enforce them (a real deployment: see the guide).


INSTRUCTORS = os.path.join(os.path.dirname(HERE), "lab", "instructor")   # `make lab-instructor`'s configuration


def per_role(spawner):
    """The instructor's server gets nbgrader's tools (formgrader included), with `make lab-instructor`'s
    Content-Security-Policy and its MathJax for Formgrader's pages (lab/instructor, lab/instructor/share);
    students get the assignment list only."""
    role = "instructor" if spawner.user.name == S["instructor"] else "student"
    spawner.environment["JUPYTER_CONFIG_PATH"] = os.path.join(HERE, role)
    if role == "instructor":
        spawner.environment["JUPYTER_CONFIG_PATH"] += os.pathsep + INSTRUCTORS
        spawner.environment["JUPYTER_PATH"] = os.path.join(INSTRUCTORS, "share")
        spawner.environment["PYTHONPATH"] = os.path.join(INSTRUCTORS, "python")   # normlab_formgrader


c.Spawner.pre_spawn_hook = per_role
