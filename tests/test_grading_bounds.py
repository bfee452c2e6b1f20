"""Bounded work outside the sandbox: what the grader does itself on a student's text has limits of its own.

A submission is capped when it is loaded (a cell's source, the notebook file), its written answers are cleaned in
a child process under a time and a memory limit, and every feedback page is written so too: over a limit, the
part is left out or shown as plain text, the submission is marked for review, and the page says so. The tests
assert on the limits, the flags and the results, never on how long anything took.

If one fails: the code is in assignments/normlab_grading/bounded.py, structure.py (load) and grade.py
(compose, feedback, own_files, timestamp_problem); run
    PATH=$PWD/.venv/bin:$PATH .venv/bin/pytest -p no:cacheprovider tests/test_grading_bounds.py -q
"""

from __future__ import annotations

import json
import resource

import pytest
from grading_support import mx, released_course, shared_tmp
from normlab_grading import bounded, grade, inert, structure


def _hog_memory():
    """Hold far more memory than any limit here allows."""
    return len(bytearray(8 << 30))


def _spin():
    while True:
        pass


def _sleep_forever():
    import time

    while True:
        time.sleep(1)


def test_bounded_work_stops_at_its_memory_limit():
    with pytest.raises(bounded.Exceeded, match="memory limit of 256 MB"):
        bounded.call(_hog_memory, (), seconds=60, memory=256 << 20)


@pytest.mark.parametrize("work", [_spin, _sleep_forever])
def test_bounded_work_stops_at_its_time_limit(work):
    with pytest.raises(bounded.Exceeded, match="time limit of 1 s"):
        bounded.call(work, (), seconds=1, memory=256 << 20)


def test_bounded_work_returns_its_value_and_leaves_this_process_unlimited():
    before = resource.getrlimit(resource.RLIMIT_AS)
    assert bounded.call(inert.clean_all, (["*a*"],), seconds=60, memory=1 << 30) == inert.clean_all(["*a*"])
    assert resource.getrlimit(resource.RLIMIT_AS) == before


def _notebook(tmp_path, cells, name="exercises.ipynb"):
    path = tmp_path / name
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_a_3_mb_code_cell_is_left_out_marked_and_named():
    nb = {"cells": [{"cell_type": "code", "source": "x = 1\n" * 500_000, "metadata": {}, "outputs": [
        {"output_type": "stream", "name": "stdout", "text": "y" * 1_000_000}], "execution_count": 3},
        {"cell_type": "code", "source": "x = 2", "metadata": {}, "outputs": [], "execution_count": 4}]}
    review = bounded.cap_cells(nb)
    first = nb["cells"][0]
    assert len(first["source"]) < 1000 and first["source"].startswith("# [left out when graded")
    assert "3,000,000 characters" in first["source"] and first["outputs"] == []
    assert nb["cells"][1]["source"] == "x = 2"
    assert len(review) == 1 and review[0].startswith("cell 0:")


def test_400_kb_of_angle_brackets_in_a_written_answer_is_left_out_before_any_clean_up():
    nb = {"cells": [{"cell_type": "markdown", "source": "<" * 400_000, "metadata": {}}]}
    review = bounded.cap_cells(nb)
    assert len(nb["cells"][0]["source"]) <= 300 and "400,000 characters" in nb["cells"][0]["source"]
    assert review and "cell 0" in review[0]
    cleaned = grade.clean_markdown_bounded([nb["cells"][0]["source"]])
    assert "left out when graded" in cleaned[0]


def test_answers_whose_clean_up_goes_over_its_limits_are_shown_as_plain_text(monkeypatch):
    monkeypatch.setattr(inert, "clean_all", lambda sources: _spin())
    monkeypatch.setattr(bounded, "CLEAN_SECONDS", 1)
    review = []
    out = grade.clean_markdown_bounded(["<b>mine</b> " + "<" * 90_000, "two"], review)
    assert len(out) == 2 and all(inert.is_cleaned(t) for t in out)
    assert "&lt;b&gt;mine" in out[0] and "<b>" not in out[0] and "plain text" in out[0]
    assert len(review) == 1 and "time limit of 1 s" in review[0]


def test_a_notebook_over_the_size_cap_is_refused_before_it_is_read(tmp_path):
    path = _notebook(tmp_path, [{"cell_type": "code", "source": "x" * 3000, "metadata": {}}])
    with pytest.raises(structure.Unreadable, match="more than the 2,000 a notebook may have"):
        structure.load(path, max_bytes=2000)


def test_metadata_nested_900_levels_deep_fails_with_a_reason(tmp_path):
    deep = "[" * 900 + "1" + "]" * 900
    path = tmp_path / "exercises.ipynb"
    path.write_text('{"cells": [{"cell_type": "code", "source": "", "metadata": {"x": ' + deep
                    + '}}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    with pytest.raises(structure.Unreadable, match=f"nested more than {structure.DEPTH} levels deep"):
        structure.load(path)


@pytest.mark.parametrize("text", ["not a date", "2026-13-45 99:99", "\x1b[2J" + "9" * 500])
def test_a_timestamp_that_is_not_a_date_is_named(tmp_path, text):
    (tmp_path / "timestamp.txt").write_text(text)
    problem = grade.timestamp_problem(tmp_path / "timestamp.txt")
    assert problem.startswith("its timestamp.txt is not a date") and "\x1b" not in problem
    (tmp_path / "timestamp.txt").write_text("2026-12-01 17:00:00.000000 UTC")
    assert grade.timestamp_problem(tmp_path / "timestamp.txt") == ""


def test_files_beside_the_notebook_are_capped_in_number_and_size(tmp_path):
    (tmp_path / "big.bin").write_bytes(b"0" * (grade.OWN_FILE_CAP + 1))
    for i in range(grade.OWN_FILES_COUNT + 5):
        (tmp_path / f"f{i:02d}.txt").write_text("x")
    (tmp_path / "timestamp.txt").write_text("2026-12-01 17:00:00 UTC")
    files, left_out = grade.own_files(tmp_path)
    assert len(files) == grade.OWN_FILES_COUNT and "big.bin" in left_out and len(left_out) == 6


def test_terminal_escapes_in_a_log_are_shown_as_text():
    hostile = "ok\x1b[2J\x1b[H\x1b]52;c;ZXZpbA==\x07every submission was graded\rFAKE\nline two\ttab"
    out = grade.printable_log(hostile)
    assert not any(ord(ch) < 32 and ch != "\n" for ch in out)
    assert "\\x1b[2J" in out and "\\r" in out and out.count("\n") == 1


def test_a_feedback_page_over_its_limits_is_replaced_by_a_plain_one(tmp_path, monkeypatch, capsys):
    course = tmp_path / "course"
    (course / "logs").mkdir(parents=True)
    monkeypatch.setattr(grade, "course_api", lambda course: None)

    def render(api, assignment, student):
        if student == "slow":
            _spin()
        if student == "greedy":
            _hog_memory()
        page = course / "feedback" / student / assignment / "exercises.html"
        page.parent.mkdir(parents=True)
        page.write_text("<p>fine</p>")
        return {"success": True, "log": "", "error": ""}

    monkeypatch.setattr(grade, "_feedback_one", render)
    problems = grade.feedback(course, "chapter23", ["slow", "ok1", "greedy", "ok2"], [], 2, course / "logs",
                              seconds=2, memory=512 << 20)
    assert set(problems) == {"slow", "greedy"}
    assert "time limit of 2 s" in problems["slow"] and "memory limit of 512 MB" in problems["greedy"]
    for student in ("slow", "greedy"):
        page = (course / "feedback" / student / "chapter23" / "exercises.html").read_text()
        assert "could not be written within the limits" in page and "<script" not in page
    assert (course / "feedback" / "ok2" / "chapter23" / "exercises.html").read_text() == "<p>fine</p>"
    progress = capsys.readouterr().out
    assert progress.count("  feedback ") == 4 and "   4/4 " in progress


def test_grading_refuses_a_course_without_its_feedback_templates(tmp_path_factory, capsys):
    course, _, _ = released_course(tmp_path_factory.mktemp("templates") / "course", shared_tmp(tmp_path_factory))
    (course / "normlab_grading" / "templates" / "feedback" / "mathjax.html.j2").unlink()
    status = grade.grade(course, grade.parse_args([mx.ASSIGNMENT]))
    out = capsys.readouterr().out
    assert status == 2 and "feedback/mathjax.html.j2" in out and "CDN" in out


def test_feedback_is_written_as_each_submission_is_recorded(tmp_path, monkeypatch, capfd):
    # The writer takes students one by one while grading goes on: a page over its limit costs only that page,
    # and the pages of the students added after it are written all the same.
    course = tmp_path / "course"
    (course / "logs").mkdir(parents=True)
    monkeypatch.setattr(grade, "course_api", lambda course: None)

    def render(api, assignment, student):
        if student == "slow":
            _spin()
        page = course / "feedback" / student / assignment / "exercises.html"
        page.parent.mkdir(parents=True)
        page.write_text(f"<p>{student}</p>")
        return {"success": True, "log": "", "error": ""}

    monkeypatch.setattr(grade, "_feedback_one", render)
    writer = grade.FeedbackWriter(course, "chapter23", 1, course / "logs", 3, seconds=2, memory=512 << 20)
    for student in ("a", "slow", "b"):
        writer.add(student)
    problems = writer.finish()
    assert list(problems) == ["slow"] and "time limit of 2 s" in problems["slow"]
    for student in ("a", "b"):
        assert (course / "feedback" / student / "chapter23" / "exercises.html").read_text() == f"<p>{student}</p>"
    assert "   3/3 " in capfd.readouterr().out


def test_a_huge_output_is_cut_to_its_caps_named_and_marked(tmp_path):
    # The record of a cell that printed 50 MB and displayed 20 MB: the graded notebook keeps the caps, says what
    # was cut in the cell's output (so in the feedback), and the submission is marked for review.
    from grading_support import ROOT, sandbox

    release = structure.load(ROOT / "assignments" / "source" / mx.ASSIGNMENT / mx.NOTEBOOK)
    cells = structure.restore(release, release).cells
    index = next(i for i, c in enumerate(cells) if c.get("cell_type") == "code")
    record = {"outputs": [{"output_type": "stream", "name": "stdout", "text": "y" * 50_000_000},
                          {"output_type": "display_data", "data": {"image/png": "A" * 20_000_000}, "metadata": {}}],
              "execution_count": 1}
    limits = sandbox.Limits()
    review = []
    nb = grade.compose(release, cells, sandbox.Run(cells={index: record}, groups={}, status="ok"), {}, {}, limits,
                       review)
    outputs = nb["cells"][index]["outputs"]
    assert len(json.dumps(outputs)) < 2 * limits.text_cap + 10_000
    text = "".join(o.get("text", "") for o in outputs)
    assert "[output cut: " in text and "left out: over the size cap" in text
    assert review == [f"cell {index}: its outputs were over the sizes kept for grading and were cut "
                      "(the feedback says where)"]
