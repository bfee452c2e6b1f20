"""nbgrader configuration of the normlab course (the seven exercises of section 23.10).

Run every nbgrader command from this folder. The course root is the folder holding this file, so the course
works wherever the folder is copied. The grading helpers in `normlab_grading/` are imported from here.
"""

import os
import sys

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import nbgrader  # noqa: E402
from normlab_grading.feedback import HideHiddenTests, MathAsMathML  # noqa: E402

c.CourseDirectory.course_id = "normlab"
c.CourseDirectory.root = HERE

# Each cell of a submission gets this many seconds when it is graded (in its sandbox, by `make grade`); a cell
# that runs longer is interrupted, marked as failed, and grading continues with the next cell.
c.Execute.timeout = 30
c.Execute.interrupt_on_timeout = True

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# Feedback shows scores, the student's code and outputs and the verdicts of the check cells; tracebacks in check
# cells are cut to the error's type and message before the HTML is written.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    HideHiddenTests,
    MathAsMathML,
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
# The maths of the feedback page is MathML in the page (MathAsMathML), so the page loads no MathJax from a CDN:
# the course's template folder, searched before nbgrader's own, replaces nbconvert's MathJax loader with nothing.
c.HTMLExporter.extra_template_basedirs = [
    os.path.join(HERE, "normlab_grading", "templates"),
    os.path.join(os.path.dirname(nbgrader.__file__), "server_extensions", "formgrader", "templates"),
]

# The exchange through which `release_assignment`, `fetch_assignment`, `submit`, `collect`, `release_feedback`
# and `fetch_feedback` pass notebooks: on JupyterHub a folder every user can reach (nbgrader's default below).
# Students' servers must be configured with the same root (see the instructor guide).
c.Exchange.root = os.environ.get("NORMLAB_EXCHANGE", "/usr/local/share/nbgrader/exchange")
# `collect` refuses an inbound folder whose student id breaks the id rule (normlab_grading/ids.py) or that belongs
# to another student's account, and times each submission by the exchange's clock, not the student's
# timestamp.txt (normlab_grading/exchange.py).
c.ExchangeFactory.collect = "normlab_grading.exchange.NormlabCollect"

# zip_collect: files downloaded from a learning platform go to downloaded/<assignment>/archive/ and must be
# named <student id>_exercises.ipynb (inside a zip or not, in any sub-folder; a copy number such as
# "erin_exercises (1).ipynb" is accepted); nbgrader matches this pattern against each extracted file's path. A
# notebook that does not match stops the command with its name (normlab_grading/collect.py), instead of being
# skipped with a warning.
c.ZipCollectApp.collector_plugin = "normlab_grading.collect.NamedCollector"
c.FileNameCollectorPlugin.named_regexp = (
    r"^(?:.*/)?(?P<student_id>[^/_]+)_(?P<file_id>exercises)(?:\s*\(\d+\)|-\d+)?\.ipynb$")

# The grader (normlab_grading/grade.py, `make grade`) runs every submission in a bubblewrap sandbox with these
# limits; the values here are the defaults (see normlab_grading/sandbox.py for all of them). The time for each
# cell is c.Execute.timeout above; the seed of the hidden inputs is COURSE_SEED in normlab_grading/plans.py.
# c.NormlabGrading.student_secret = "..."  # set it (in a private copy) for hidden inputs of each student's own
c.NormlabGrading.check_seconds = 30      # all the calls of one check cell's visible and hidden cases together
c.NormlabGrading.submission_seconds = 900
c.NormlabGrading.memory_mb = 4096
