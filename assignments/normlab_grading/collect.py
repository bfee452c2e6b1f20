"""`nbgrader zip_collect` for this course: every downloaded notebook is filed under its student, or the command
stops and says which file it could not place (nbgrader's own plugin skips such a file with a warning only).

A file must be named `<student id>_exercises.ipynb` (the pattern is `FileNameCollectorPlugin.named_regexp` in
nbgrader_config.py); a copy number that browsers and platforms add, as in `erin_exercises (1).ipynb` or
`erin_exercises-2.ipynb`, is accepted. Two files for the same student stop the command too (nbgrader cannot
tell which one is newer): keep the one to grade and run it again. So does a student id that breaks the id rule
of `ids.py` (1 to 64 characters from A-Z a-z 0-9 . _ @ + -, not `.` or `..`): such an id would file a notebook
outside submitted/<id>/, or split a list or a CSV row, or be read as markup by a page that shows it.
"""

from __future__ import annotations

import os
import sys

from nbgrader.plugins import FileNameCollectorPlugin

from normlab_grading import ids


class NamedCollector(FileNameCollectorPlugin):
    def collect(self, submitted_file: str):
        info = super().collect(submitted_file)
        if info is None and os.path.splitext(submitted_file)[1] in self.valid_ext:
            self.log.error("zip_collect cannot tell whose notebook %r is: name it <student id>_exercises.ipynb "
                           "(a student id without '_' or '/'), or change "
                           "c.FileNameCollectorPlugin.named_regexp in nbgrader_config.py; nothing was collected",
                           os.path.basename(submitted_file))
            sys.exit(1)
        if info is not None and not ids.usable(info.get("student_id", "")):
            self.log.error("zip_collect will not file %r: %s; rename the file; nothing was collected",
                           os.path.basename(submitted_file), ids.problem(info.get("student_id", "")))
            sys.exit(1)
        return info
