"""The one rule for student ids: plain data, never markup, never a path or a list.

An id is 1 to 64 characters from `A-Z a-z 0-9 . _ @ + -` and starts with a letter or a digit (so it is never `.`
or `..`, nor read as a command-line option or a spreadsheet formula). Such an id names one folder, one file and
one CSV cell as itself, holds no comma that nbgrader would split a list at, no glob character, and no character
a web page would read as markup. `make grade`, zip_collect, the exchange's collect, `make grades-lms`
and the classroom all ask `check` before a page or a file shows an id.
"""

from __future__ import annotations

import re

ALLOWED = "A-Z a-z 0-9 . _ @ + -, starting with a letter or a digit"
MAX_LENGTH = 64
_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")


def usable(student_id) -> bool:
    """True when `student_id` follows the id rule."""
    return isinstance(student_id, str) and _PATTERN.fullmatch(student_id) is not None


def problem(student_id) -> str:
    """Why `student_id` breaks the rule, in one sentence naming it and the allowed set ('' when it is usable)."""
    if usable(student_id):
        return ""
    return f"the student id {student_id!r} is refused: an id is 1 to {MAX_LENGTH} characters from {ALLOWED}"


def check(student_id, argument: str = "student_id") -> str:
    """`student_id` itself when usable; raises ValueError naming `argument`, the id and the allowed set."""
    if not isinstance(student_id, str):
        raise TypeError(f"{argument}: got {type(student_id).__name__}, expected a str")
    if not usable(student_id):
        raise ValueError(f"{argument}: {problem(student_id)}")
    return student_id
