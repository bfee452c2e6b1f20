"""The JupyterLab face of a section's questions: an anywidget whose ES module is frontend.js, the same file the
book's pages run as a classic script. JupyterLab's Content-Security-Policy runs no inline script; anywidget
imports the module from a blob: URL, which the policy allows (lab/normlab_csp.py). Answers stay in the browser
(localStorage): the kernel only sends the questions."""

from __future__ import annotations

from pathlib import Path

import anywidget
import traitlets

HERE = Path(__file__).parent


class QuestionsView(anywidget.AnyWidget):
    """Section `label`'s questions, answered in the browser."""

    _esm = HERE / "frontend.js"
    _css = HERE / "frontend.css"
    spec = traitlets.Dict().tag(sync=True)

    def __init__(self, label: str):
        from . import spec

        super().__init__(spec=spec(label))
        self.label = label

    def __repr__(self) -> str:
        return f"<questions of {self.label}: run the notebook in JupyterLab to answer them>"

    def _ipython_display_(self):
        """The widget, after a plain list of the questions for where it cannot be shown (a reopened notebook,
        another viewer); the list's style hides it beside a working widget."""
        from IPython.display import display

        from . import fallback_html

        hide = (".jp-OutputArea:has(.nl-questions) > .jp-OutputArea-child:has(.nl-q-fallback) {display: none}")
        display({"text/html": f"<style>{hide}</style>{fallback_html(self.label)}",
                 "text/plain": f"Check yourself ({self.label}): run the notebook to answer the questions."}, raw=True)
        data, metadata = self._repr_mimebundle_()
        display({**data, "text/plain": ""}, metadata=metadata, raw=True)
