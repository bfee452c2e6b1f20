"""JupyterLab for this repository: `make lab` (learners) and `make lab-instructor` (instructors).

* Learners (`python scripts/lab.py`): the server's root is the repository, so that every link in a
  notebook works (`../book/glossary.md#sublayer` is inside it, and opens rendered, at its entry:
  lab-settings/overrides.json, which `make venv` installs, makes Markdown files open in JupyterLab's
  Markdown preview), and the first page is the notebooks folder. nbgrader's server extensions
  (formgrader, assignment list, course list, validate) and its JupyterLab extension (the Validate
  button, the Nbgrader menu, the Assignments and Formgrader panels, "Create Assignment") are off,
  through the configuration folder lab/learner, which JUPYTER_CONFIG_PATH puts ahead of the
  installed configuration. So is jupyterlab-myst's renderer of Markdown *files* (its notebook cells
  stay MyST): JupyterLab's own Markdown preview scrolls to a link's #entry, the MyST one does not.
  Its pages send a Content-Security-Policy that runs no script a notebook's Markdown carries
  (lab/normlab_csp.py; the instructors' and the classroom's servers send it too).
* Instructors (`python scripts/lab.py --instructor`): JupyterLab with nbgrader's tools as installed,
  started in the course folder assignments/ (where nbgrader_config.py is, so that the Formgrader finds
  the course; book/instructors.md describes it), with the configuration folder lab/instructor first on
  JUPYTER_CONFIG_PATH: a Content-Security-Policy on every page (lab/instructor/jupyter_server_config.py).

Arguments after the options go to `jupyter lab` unchanged (e.g. `--port=8890`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEARNER_CONFIG = ROOT / "lab" / "learner"
INSTRUCTOR_CONFIG = ROOT / "lab" / "instructor"
COURSE = ROOT / "assignments"
FIRST_FOLDER = "notebooks"


def lab_args(root: Path = ROOT, instructor: bool = False) -> list[str]:
    """The `jupyter lab` options for a server whose root is `root` (the repository, or for instructors the
    course folder)."""
    first = "/lab" if instructor else f"/lab/tree/{FIRST_FOLDER}"
    args = [f"--ServerApp.root_dir={root}", f"--LabApp.default_url={first}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--allow-root")  # JupyterLab refuses to start as root unless told (containers, CI machines)
    return args


def lab_env(env: dict[str, str], instructor: bool = False) -> dict[str, str]:
    """`env` with the learners' (or the instructors') configuration folder first on JUPYTER_CONFIG_PATH."""
    env = dict(env)
    paths = [str(INSTRUCTOR_CONFIG if instructor else LEARNER_CONFIG), env.get("JUPYTER_CONFIG_PATH")]
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(p for p in paths if p)
    if instructor:
        # Formgrader's pages (nbconvert's classic template) load MathJax 2 from a CDN, which the server's
        # Content-Security-Policy (and a machine without network) refuses, and Formgrader's script fails with it.
        # lab/instructor/share/nbconvert/templates/base/mathjax.html.j2, found first on JUPYTER_PATH, loads the
        # copy this server serves (jupyter_server_mathjax) instead.
        paths = [str(INSTRUCTOR_CONFIG / "share"), env.get("JUPYTER_PATH")]
        env["JUPYTER_PATH"] = os.pathsep.join(p for p in paths if p)
        # lab/instructor/python holds normlab_formgrader, the server extension that loads Formgrader with every
        # value it inserts escaped (lab/instructor/jupyter_server_config.d/normlab_formgrader.json enables it).
        paths = [str(INSTRUCTOR_CONFIG / "python"), env.get("PYTHONPATH")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


def main(argv: list[str]) -> int:
    instructor = "--instructor" in argv
    extra = [a for a in argv if a != "--instructor"]
    jupyter = Path(sys.executable).parent / "jupyter"
    who = ("instructors (nbgrader's tools on)" if instructor
           else "learners (nbgrader's tools off; instructors: make lab-instructor)")
    root = COURSE if instructor else ROOT
    print(f"JupyterLab for {who}, serving {root}", flush=True)
    os.chdir(root)
    os.execve(str(jupyter), [str(jupyter), "lab", *lab_args(root, instructor), *extra], lab_env(os.environ, instructor))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
