""""Check yourself": the questions at the end of each section page, declared as data, one module per section.

A section module (s01_what_you_will_learn.py, ..., lab_does_it_train.py) holds SECTION (its label, "23.3"),
NOTEBOOK (the notebook's stem) and QUESTIONS, a list of `Choice` and `Number`. Numbers in them (answers, options
that quote a value) are computed by normlab_core while the module is imported, never typed in.

Both faces show them with one script, frontend.js: the book's pages load it as a classic script and boot every
<div class="nl-questions"> they carry (scripts/finish_site.py adds it to those pages); JupyterLab imports it as
the ES module of an anywidget (widget.py). `show_questions(label)` picks the face, as `display.show` does."""

from __future__ import annotations

import html
import importlib
import json
import math
from dataclasses import dataclass, field

# label -> module name in this package; the order is the book's.
SECTIONS = {
    "23.1": "s01_what_you_will_learn",
    "23.2": "s02_the_problem",
    "23.3": "s03_mean_and_variance",
    "23.4": "s04_layer_norm",
    "23.5": "s05_rms_norm",
    "23.6": "s06_comparing",
    "23.7": "s07_pre_post_norm",
    "23.8": "s08_backward",
    "23.9": "s09_key_takeaways",
    "lab": "lab_does_it_train",
}
KINDS = ("choice", "predict", "number")


@dataclass(frozen=True)
class Choice:
    """One multiple-choice question: `options` in the order shown, `answer` the index of the right one, `explain`
    shown after any answer, `why` (optional, one per option) what a reader who picked that option missed. With
    `then` it is a "predict, then move the slider" question: `then` says what to do on the figure above."""

    id: str
    prompt: str
    options: tuple[str, ...]
    answer: int
    explain: str
    why: tuple[str, ...] = ()
    then: str = ""

    def __post_init__(self):
        if not isinstance(self.answer, int) or not 0 <= self.answer < len(self.options):
            raise ValueError(f"{self.id}: answer must index options (0..{len(self.options) - 1}); got {self.answer!r}")
        if len(self.options) < 2 or len(set(self.options)) != len(self.options):
            raise ValueError(f"{self.id}: options must be two or more different texts; got {self.options!r}")
        if self.why and len(self.why) != len(self.options):
            raise ValueError(f"{self.id}: why must have one text per option ({len(self.options)}); got {len(self.why)}")

    @property
    def kind(self) -> str:
        return "predict" if self.then else "choice"

    def key(self) -> str:
        """The right answer as printed."""
        return self.options[self.answer]

    def data(self) -> dict:
        return {"id": self.id, "kind": self.kind, "prompt": self.prompt, "options": list(self.options),
                "answer": self.answer, "explain": self.explain, "why": list(self.why), "then": self.then,
                "key": self.key()}


@dataclass(frozen=True)
class Number:
    """One question answered by a number: right when it is within `tol` of `answer` (computed, not typed);
    `shown` is how the answer is printed, `unit` follows the input box."""

    id: str
    prompt: str
    answer: float
    tol: float
    explain: str
    shown: str = ""
    unit: str = ""
    then: str = field(default="")

    def __post_init__(self):
        if not (isinstance(self.answer, (int, float)) and math.isfinite(self.answer)):
            raise ValueError(f"{self.id}: answer must be a finite number; got {self.answer!r}")
        if not (isinstance(self.tol, (int, float)) and self.tol > 0):
            raise ValueError(f"{self.id}: tol must be a positive number; got {self.tol!r}")

    kind = "number"

    def key(self) -> str:
        return self.shown or f"{self.answer:g}"

    def accepts(self, value: float) -> bool:
        """True when `value` counts as right (frontend.js applies the same rule)."""
        return abs(value - self.answer) <= self.tol

    def data(self) -> dict:
        return {"id": self.id, "kind": "number", "prompt": self.prompt, "answer": float(self.answer),
                "tol": float(self.tol), "explain": self.explain, "unit": self.unit, "then": self.then,
                "key": self.key()}


def module(label: str):
    """The module that declares section `label`'s questions (ValueError for a label not in SECTIONS)."""
    if label not in SECTIONS:
        raise ValueError(f"show_questions: section must be one of {', '.join(SECTIONS)}; got {label!r}")
    return importlib.import_module(f"{__name__}.{SECTIONS[label]}")


def questions(label: str) -> list:
    """Section `label`'s questions, in order."""
    return list(module(label).QUESTIONS)


def spec(label: str) -> dict:
    """What frontend.js draws a section's questions from, in both faces."""
    return {"section": label, "questions": [q.data() for q in questions(label)]}


def fallback_html(label: str) -> str:
    """The questions as plain text with no controls, for where the script cannot run (a notebook opened without a
    kernel): the prompts and options, and how to answer them."""
    items = []
    for q in questions(label):
        opts = "".join(f"<li>{html.escape(o)}</li>" for o in getattr(q, "options", ()))
        items.append(f"<li>{html.escape(q.prompt)}{f'<ol type=a>{opts}</ol>' if opts else ''}</li>")
    return (f"<div class='nl-q-fallback'><ol>{''.join(items)}</ol><p>To answer them here and see the explanations, "
            "run the notebook (Run &gt; Run All Cells).</p></div>")


def static_html(label: str) -> str:
    """The book's HTML for a section's questions: the spec as inert JSON, booted by the page's
    normlab-questions.js (no inline script runs)."""
    body = json.dumps(spec(label), separators=(",", ":")).replace("</", "<\\/")
    slug = label.replace(".", "-")
    return (f'<div class="nl-questions" id="nl-q-{slug}" data-section="{html.escape(label)}">\n'
            f'<script type="application/json" class="nl-q-spec">{body}</script>\n'
            f'<noscript>{fallback_html(label)}</noscript>\n</div>')


def show_questions(label: str) -> None:
    """Display section `label`'s questions: a live widget in a kernel, the book's HTML while the book is built
    (NORMLAB_STATIC=1)."""
    import os

    from IPython.display import HTML, display

    spec(label)   # a bad label raises here, in both faces
    if os.environ.get("NORMLAB_STATIC") == "1":
        display(HTML(static_html(label)))
        return
    from .widget import QuestionsView

    display(QuestionsView(label))
