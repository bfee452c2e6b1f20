"""A class through nbgrader's exchange, on this machine with a temporary exchange root.

The instructor releases the assignment to the exchange; two students (alice and bob, each with a home folder
of their own) fetch it, answer and submit; the instructor collects, grades (`normlab_grading.grade`, as `make
grade` runs it) and releases the feedback; each student fetches their own feedback. Students name themselves
with `--student`, as on a JupyterHub where every user's system account is called jovyan and nbgrader reads
JUPYTERHUB_USER. Every command is nbgrader's own application, run in this process with the arguments of the
command line in the instructor guide (a fresh `nbgrader` process per command would spend seconds importing).
"""

from __future__ import annotations

import contextlib
import html
import io
import re
from pathlib import Path

import nbformat
import pytest
from grading_support import (
    SOURCE,
    WRONG,
    auto_score,
    mx,
    nbgrader_here,
    point_totals,
    released_course,
    replaced,
    require_sandbox,
    shared_tmp,
    solutions,
)


def nbgrader(command: str, *args, cwd: Path, home: Path, exchange: Path, monkeypatch) -> str:
    """`nbgrader <command> <args>` run from cwd with HOME=home, in this process; its log."""
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("NORMLAB_EXCHANGE", str(exchange))
    for name in ("JUPYTER_DATA_DIR", "JUPYTER_CONFIG_DIR", "JUPYTERHUB_USER"):
        monkeypatch.delenv(name, raising=False)
    return nbgrader_here(cwd, command, *args)


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory):
    require_sandbox()
    mp = pytest.MonkeyPatch()
    base = tmp_path_factory.mktemp("exchange-class")
    course, source, released = released_course(base / "course", shared_tmp(tmp_path_factory))
    exchange = base / "exchange"
    exchange.mkdir()
    exchange.chmod(0o777)
    teacher = base / "home-teacher"
    teacher.mkdir()
    common = {"home": teacher, "exchange": exchange, "monkeypatch": mp}
    try:
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
            who = {"cwd": home, "home": home, "exchange": exchange, "monkeypatch": mp}
            nbgrader("fetch_assignment", mx.ASSIGNMENT, "--course", "normlab", **who)
            path = home / mx.ASSIGNMENT / mx.NOTEBOOK
            nbformat.write(replaced(nbformat.read(path, as_version=4), replace), path)
            nbgrader("submit", mx.ASSIGNMENT, "--course", "normlab", "--student", student, **who)
        collected = nbgrader("collect", mx.ASSIGNMENT, cwd=course, **common)

        from normlab_grading import grade

        mp.chdir(course)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = grade.main([mx.ASSIGNMENT, "-j", "1"])
        nbgrader("release_feedback", mx.ASSIGNMENT, cwd=course, **common)
        for student, home in homes.items():
            nbgrader("fetch_feedback", mx.ASSIGNMENT, "--course", "normlab", "--student", student,
                     cwd=home, home=home, exchange=exchange, monkeypatch=mp)
    finally:
        mp.undo()
    return course, homes, status, out.getvalue(), collected


def test_collect_finds_both_submissions_and_warns_about_names_it_cannot_check(round_trip):
    course, _, _, _, collected = round_trip
    for student in ("alice", "bob"):
        assert (course / "submitted" / student / mx.ASSIGNMENT / mx.NOTEBOOK).is_file()
    # --student is taken on trust: nbgrader only warns that the files belong to another account.
    assert "claims to be submitted by alice but is owned by" in collected


def test_grade_command_grades_the_class(round_trip):
    _, _, status, out, _ = round_trip
    assert status == 0, out
    total = point_totals(nbformat.read(SOURCE, as_version=4))[1]   # the reader's points count in the maximum
    for student, score in (("alice", auto_score()), ("bob", auto_score(("2a",)))):   # bob: WRONG["2a"]
        assert re.search(rf"^{student}\s+{score:.1f}\s+{total:.1f}\s+ok$", out, re.M), (student, score, total, out)


def test_each_student_fetches_their_own_feedback(round_trip):
    _, homes, _, _, _ = round_trip
    pages = {}
    for student, home in homes.items():
        found = sorted((home / mx.ASSIGNMENT / "feedback").glob("*/exercises.html"))
        assert len(found) == 1, f"{student}: {found}"
        page = found[0].read_text(encoding="utf-8")
        pages[student] = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert "AssertionError: 2(a): rmsnorm_backward(dy_check, x_check, gamma_check, eps=1e-5): returned" in pages["bob"]
    assert "(The visible check in your notebook said: 2(a): your gradient differs from finite differences" \
        in pages["bob"]
    assert "AssertionError" not in pages["alice"]
    for page in pages.values():
        assert "HIDDEN TESTS" not in page and "hidden_checks" not in page
