"""A class through nbgrader's exchange, on this machine with a temporary exchange root.

The instructor releases the assignment to the exchange; two students (alice and bob, each with a home folder
of their own) fetch it, answer and submit; the instructor collects, runs `make grade` and releases the
feedback; each student fetches their own feedback. Students name themselves with `--student`, as on a
JupyterHub where every user's system account is called jovyan and nbgrader reads JUPYTERHUB_USER.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from grading_support import WRONG, mx, released_course, replaced, solutions


def run(args, cwd: Path, home: Path, exchange: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, HOME=str(home), NORMLAB_EXCHANGE=str(exchange))
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("JUPYTER_DATA_DIR", None)
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return proc


def nbgrader(*args, cwd, home, exchange, ok=True):
    proc = run([sys.executable, "-m", "nbgrader", *args], cwd, home, exchange)
    if ok:
        assert proc.returncode == 0, f"nbgrader {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory):
    base = tmp_path_factory.mktemp("exchange-class")
    course, source, released = released_course(base / "course")
    exchange = base / "exchange"
    exchange.mkdir()
    exchange.chmod(0o777)
    teacher = base / "home-teacher"
    teacher.mkdir()
    common = {"home": teacher, "exchange": exchange}
    nbgrader("release_assignment", mx.ASSIGNMENT, cwd=course, **common)

    answers = {"alice": solutions(source), "bob": {**solutions(source), WRONG["2a"][0]: WRONG["2a"][1]}}
    homes = {}
    for student, replace in answers.items():
        home = base / f"home-{student}"
        home.mkdir()
        homes[student] = home
        # On a hub, a config file read by every user's server names the exchange (e.g. /etc/jupyter/).
        (home / ".jupyter").mkdir()
        (home / ".jupyter" / "nbgrader_config.py").write_text(f"c.Exchange.root = {str(exchange)!r}\n")
        who = {"cwd": home, "home": home, "exchange": exchange}
        nbgrader("fetch_assignment", mx.ASSIGNMENT, "--course", "normlab", **who)
        path = home / mx.ASSIGNMENT / mx.NOTEBOOK
        fetched = nbformat.read(path, as_version=4)
        nbformat.write(replaced(fetched, replace), path)
        nbgrader("submit", mx.ASSIGNMENT, "--course", "normlab", "--student", student, **who)

    nbgrader("collect", mx.ASSIGNMENT, cwd=course, **common)
    grade = run(["make", "-C", str(course), "grade", f"PYTHON={sys.executable}"], course, teacher, exchange)
    nbgrader("release_feedback", mx.ASSIGNMENT, cwd=course, **common)
    for student, home in homes.items():
        nbgrader("fetch_feedback", mx.ASSIGNMENT, "--course", "normlab", "--student", student,
                 cwd=home, home=home, exchange=exchange)
    return course, homes, grade


def test_collect_finds_both_submissions(round_trip):
    course, _, _ = round_trip
    for student in ("alice", "bob"):
        assert (course / "submitted" / student / mx.ASSIGNMENT / mx.NOTEBOOK).is_file()


def test_grade_command_grades_the_class(round_trip):
    _, _, grade = round_trip
    assert grade.returncode == 0, grade.stdout + grade.stderr
    assert re.search(r"^alice\s+18\.0\s+26\.0\s+ok$", grade.stdout, re.M), grade.stdout
    assert re.search(r"^bob\s+13\.0\s+26\.0\s+ok$", grade.stdout, re.M), grade.stdout


def test_each_student_fetches_their_own_feedback(round_trip):
    _, homes, _ = round_trip
    pages = {}
    for student, home in homes.items():
        found = sorted((home / mx.ASSIGNMENT / "feedback").glob("*/exercises.html"))
        assert len(found) == 1, f"{student}: {found}"
        page = found[0].read_text(encoding="utf-8")
        pages[student] = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert "AssertionError: 2(a): your gradient differs from finite differences" in pages["bob"]
    assert "AssertionError" not in pages["alice"]
    for page in pages.values():
        assert "HIDDEN TESTS" not in page and "hidden_checks.py" not in page
