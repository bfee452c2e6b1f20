"""Nothing a student writes runs in the pages rendered from the graded notebook (without a browser).

The hostile submission of hostile_markup (script in the written answer, raw HTML, JavaScript, SVG, Markdown,
LaTeX and widget outputs, an image whose base64 text breaks out of its attribute, event attributes, javascript:
links, cell tags and ids that close their attribute, a raw cell, attachments) is run by the real runner
(without bubblewrap: these are display tricks, not escapes), rebuilt and composed by the grader, and rendered
with the two templates that show it: Formgrader's manual grading page and the feedback page. In neither HTML
may a payload sit in a script, an event attribute, a link or a frame; the answer's words, the text outputs and
the PNG must still be there. tests/test_grading_browser.py opens the same pages in Chromium.
"""

from __future__ import annotations

import base64
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from grading_support import COURSE, ROOT, sandbox, structure
from hostile_markup import ANSWER_WORDS, SHOWN, hostile, png
from normlab_grading import grade, inert

STORED = ROOT / "notebooks" / "10_exercises.ipynb"   # the student version, as nbgrader releases it


class Active(HTMLParser):
    """Every place in a page where text can run: script bodies, event attributes, URLs, frames."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.active: list[str] = []
        self.text: list[str] = []
        self.images: list[str] = []
        self._script = False

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self._script = tag == "script"
        if tag in ("iframe", "object", "embed", "svg", "frame", "base", "form"):
            self.active.append(f"<{tag} {attrs}>")
        for name, value in attrs:
            value = value or ""
            if name.startswith("on") or name in ("srcdoc", "formaction") or (
                    name in ("href", "src", "action", "xlink:href") and "script:" in value.lower().replace(" ", "")):
                self.active.append(f"<{tag} {name}={value[:80]!r}>")
            elif "__pwned" in value:
                self.active.append(f"<{tag} {name}={value[:80]!r}>")
        if tag == "img":
            self.images.append(dict(attrs).get("src", ""))

    def handle_endtag(self, tag):
        if tag == "script":
            self._script = False

    def handle_data(self, data):
        if self._script:
            self.active.append(f"<script>{data[:200]}</script>")
        else:
            self.text.append(data)


@pytest.fixture(scope="module")
def graded():
    release = structure.load(STORED)
    submitted = hostile(release)
    restored = structure.restore(submitted, release)
    cells = [{"index": i, "source": c["source"]} for i, c in enumerate(restored.cells) if c["cell_type"] == "code"]
    limits = sandbox.Limits(cell_seconds=20, startup_seconds=60)
    run = sandbox.run_submission(cells, lambda records: {"groups": []}, limits, sandbox=False)
    assert run.status == "ok", run.reason + run.log
    return grade.compose(release, restored.cells, run, {}, {}, limits)


def render(nb: dict, template: str, exporter=None) -> str:
    """The page of `template`; the feedback page with the grader's own exporter unless `exporter` is given."""
    import nbformat
    from nbconvert.exporters import HTMLExporter
    from normlab_grading.feedback import FeedbackHTMLExporter
    from traitlets.config import Config

    exporter = exporter or (FeedbackHTMLExporter if template == "feedback" else HTMLExporter)

    config = Config()
    if template == "formgrade":   # as nbgrader's formgrader sets up its exporter
        from nbgrader.server_extensions.formgrader import handlers

        config.HTMLExporter.template_name = "formgrade"
        config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
        resources = {"base_url": "/", "assignment_id": "chapter23", "notebook_id": "exercises", "submission_id": "x",
                     "index": 0, "total": 1, "student": "s", "last_name": "", "first_name": "",
                     "notebook_path": "/tree/autograded/s/chapter23/exercises.ipynb"}
    else:   # the feedback page: nbgrader generate_feedback's exporter, with the course's templates and preprocessors
        from nbgrader.server_extensions.formgrader import handlers

        course = course_config()
        config.HTMLExporter.template_name = "feedback"
        config.HTMLExporter.extra_template_basedirs = course.HTMLExporter.extra_template_basedirs
        config.HTMLExporter.extra_template_paths = [str(Path(handlers.template_path).parent / "static" / "node_modules"
                                                        / "bootstrap" / "dist" / "css")]
        resources = {"nbgrader": {"score": 0, "max_score": 29, "late_penalty": 0, "notebook": "exercises"}}
    node = nbformat.from_dict(json.loads(json.dumps(nb)))
    for cell in node.cells:   # what nbgrader's GetGrades adds before the feedback is rendered
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            meta["score"] = 0
    if template == "feedback":
        for step in course.GenerateFeedback.preprocessors:
            if not isinstance(step, str):   # the course's own (nbgrader's GetGrades needs a gradebook)
                node, _ = step().preprocess(node, {})
    body, _ = exporter(config=config).from_notebook_node(node, resources=resources)
    return body


def without_images(nb: dict) -> dict:
    nb = json.loads(json.dumps(nb))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = [o for o in cell["outputs"] if not any(k.startswith("image/") for k in o.get("data", {}))]
    return nb


@pytest.mark.parametrize("images", [True, False])
def test_the_graders_feedback_exporter_writes_the_page_nbconvert_writes(graded, images):
    """The grader's exporter (templates compiled once per process; HTMLExporter's last BeautifulSoup pass skipped
    on a page with no image) gives the same document as nbconvert's HTMLExporter: the same tree once parsed.
    If this fails, fix normlab_grading/feedback.py's FeedbackHTMLExporter (or drop it from grade.course_api)."""
    from bs4 import BeautifulSoup
    from nbconvert.exporters import HTMLExporter

    nb = graded if images else without_images(graded)
    ours, theirs = render(nb, "feedback"), render(nb, "feedback", HTMLExporter)
    assert ("<img" in ours) == images
    assert str(BeautifulSoup(ours, "html.parser")) == str(BeautifulSoup(theirs, "html.parser"))
    if images:
        assert ours == theirs and 'alt="No description has been provided for this image"' in ours


def course_config():
    """The course's nbgrader_config.py, loaded as nbgrader loads it."""
    from traitlets.config.loader import PyFileConfigLoader

    return PyFileConfigLoader("nbgrader_config.py", path=str(COURSE)).load_config()


@pytest.mark.parametrize("template", ["formgrade", "feedback"])
def test_no_student_markup_is_active_in_the_rendered_pages(graded, template):
    page = Active()
    page.feed(render(graded, template))
    student = [a for a in page.active if "__pwned" in a or "script:" in a.lower()]
    assert student == [], student
    text = " ".join(" ".join(page.text).split())
    for words in (ANSWER_WORDS, *SHOWN):
        assert words in text, words
    want = base64.b64encode(png()).decode()
    assert any(src.endswith(want) and src.startswith("data:image/png;base64,") for src in page.images), page.images


def test_the_feedback_page_typesets_the_instructors_maths_and_loads_nothing(graded):
    body = render(graded, "feedback")
    assert "<script" not in body and "cdnjs" not in body, "the feedback page loads a script (MathJax from a CDN)"
    release = structure.load(STORED)
    prose = "".join(c["source"] for c in release["cells"] if c["cell_type"] == "markdown" and not structure.grade_id(c))
    assert "$\\varepsilon" in prose and body.count("<math ") >= prose.count("$") // 2 - prose.count("$$")
    page = Active()
    page.feed(body)
    text = " ".join(page.text)
    assert "\\varepsilon" not in text.replace("$\\sigma + \\epsilon$", "")   # the instructor's maths is typeset
    assert "$\\sigma + \\epsilon$" in text   # and the student's is shown as they typed it
    assert "$\\href{javascript:" in text   # (the converter would have made a link of it)


def test_only_text_and_images_are_kept_of_the_outputs(graded):
    kinds = {m for c in graded["cells"] for o in c.get("outputs", []) for m in o.get("data", {})}
    assert kinds <= set(inert.SAFE_MIME), kinds
    notes = [o["data"]["text/plain"] for c in graded["cells"] for o in c.get("outputs", [])
             if o.get("data", {}).get("text/plain", "").startswith("[an output of type")]
    assert any("application/javascript" in n for n in notes) and any("image/svg+xml" in n for n in notes), notes
    for cell in graded["cells"]:
        assert "__pwned" not in json.dumps(cell.get("metadata", {})), cell.get("metadata")   # the cell tags
        assert "attachments" not in cell and cell["cell_type"] in ("code", "markdown")
        assert structure.CELL_ID.match(cell["id"]), cell["id"]


def test_an_untouched_written_answer_keeps_its_text():
    release = structure.load(STORED)
    answer = next(c for c in release["cells"] if structure.grade_id(c) == "ex5_answer")
    run = sandbox.Run(cells={}, groups={}, status="ok")
    nb = grade.compose(release, structure.restore(release, release).cells, run, {}, {}, sandbox.Limits())
    kept = next(c for c in nb["cells"] if structure.grade_id(c) == "ex5_answer")
    assert kept["source"] == answer["source"]   # nbgrader scores an unchanged answer 0 by its checksum
    prose = [c["source"] for c in release["cells"] if c["cell_type"] == "markdown" and not structure.grade_id(c)]
    assert [c["source"] for c in nb["cells"] if c["cell_type"] == "markdown" and not structure.grade_id(c)] == prose


def test_the_instructors_server_sends_a_content_security_policy():
    import runpy

    from scripts import lab as lab_script

    env = lab_script.lab_env({}, instructor=True)
    folder = Path(env["JUPYTER_CONFIG_PATH"].split(":")[0])
    assert folder == ROOT / "lab" / "instructor"

    class Config(dict):
        def __getattr__(self, name):
            return self.setdefault(name, Config())

        def __setattr__(self, name, value):
            self[name] = value

    config = Config()
    runpy.run_path(str(folder / "jupyter_server_config.py"), init_globals={"get_config": lambda: config})
    csp = config["ServerApp"]["tornado_settings"]["headers"]["Content-Security-Policy"]
    for directive in ("default-src 'self'", "object-src 'none'", "base-uri 'self'", "connect-src 'self'",
                      "form-action 'self'", "frame-ancestors 'self'", "img-src 'self' data: blob:"):
        assert directive in csp, directive
    assert COURSE.is_dir()
