"""nbgrader configuration of the normlab course (the six exercises of section 23.10).

Run every nbgrader command from this folder. The course root is the folder holding this file,
so the course works wherever the folder is copied.
"""

import os

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.CourseDirectory.course_id = "normlab"
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))

# Each cell of a submission gets this many seconds when it is autograded; a cell that runs longer is
# interrupted, marked as failed, and grading continues with the next cell.
c.Execute.timeout = 30
c.Execute.interrupt_on_timeout = True

# The exercises use the course's own library, installed in the same environment as nbgrader.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
