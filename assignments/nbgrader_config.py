"""nbgrader configuration of the normlab course (the six exercises of section 23.10).

Run every nbgrader command from this folder. The course root is the folder holding this file, so the course
works wherever the folder is copied. The grading helpers in `normlab_grading/` are imported from here.
"""

import os
import sys

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from normlab_grading.feedback import HideHiddenTests  # noqa: E402

c.CourseDirectory.course_id = "normlab"
c.CourseDirectory.root = HERE

# Each cell of a submission gets this many seconds when it is autograded; a cell that runs longer is
# interrupted, marked as failed, and grading continues with the next cell.
c.Execute.timeout = 30
c.Execute.interrupt_on_timeout = True

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# Feedback shows scores, the student's code and outputs and the messages of failed checks; the hidden tests
# (source and tracebacks) are removed before the HTML is written.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    HideHiddenTests,
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]

# The exchange through which `release_assignment`, `fetch_assignment`, `submit`, `collect`, `release_feedback`
# and `fetch_feedback` pass notebooks: on JupyterHub a folder every user can reach (nbgrader's default below).
# Students' servers must be configured with the same root (see the instructor guide).
c.Exchange.root = os.environ.get("NORMLAB_EXCHANGE", "/usr/local/share/nbgrader/exchange")

# zip_collect: files downloaded from a learning platform go to downloaded/<assignment>/archive/ and must be
# named <student id>_exercises.ipynb (inside a zip or not, in any sub-folder); nbgrader matches this pattern
# against each extracted file's path.
c.ZipCollectApp.collector_plugin = "nbgrader.plugins.FileNameCollectorPlugin"
c.FileNameCollectorPlugin.named_regexp = r"^(?:.*/)?(?P<student_id>[^/_]+)_(?P<file_id>exercises\.ipynb)$"
