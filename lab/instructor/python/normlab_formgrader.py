"""nbgrader's Formgrader with every value it inserts escaped (the instructors' server: `make lab-instructor`, and
the instructor's server on the classroom hub).

Formgrader 0.9.6 writes student ids, names and the ids in its addresses into its pages as raw HTML: its Jinja
environment does not escape, its scripts read ids from `var x = "{{ x }}";`, its manual-grading page (an
nbconvert template) inserts the student's id and name as they are, and its script's `createModal` parses a
message string as HTML. A student id such as `<img src=x onerror=...>` then ran script with the instructor's
session. This extension loads Formgrader itself (lab/instructor/jupyter_server_config.d/normlab_formgrader.json
turns nbgrader's own loading of it off, so that without this module there is no Formgrader rather than an unsafe
one), after three changes:

* its pages are rendered by an autoescaping Jinja environment, and each `var x = "{{ value }}";` line of its
  templates becomes `var x = {{ value | tojson }};` (a JavaScript string that no value can leave);
* the manual-grading page gets the ids, names and paths it shows as escaped text;
* `createModal`, given a message string, shows it as text.
"""

from __future__ import annotations

import html
import re

SCRIPT_VALUE = re.compile(r'^(\s*var\s+\w+\s*=\s*)"\{\{\s*([A-Za-z_][\w.]*)\s*\}\}"\s*;', re.MULTILINE)
UTILS_TAG = re.compile(r'(<script src="[^"]*/formgrader/static/js/utils\.js"></script>)')
# After utils.js: a message given to createModal as a string is put in as text, not parsed as HTML.
MODAL_AS_TEXT = """
  <script>
  (function () {
    var asHtml = window.createModal;
    window.createModal = function (id, title, body, footer) {
      if (typeof body === "string") { body = $("<p/>").text(body); }
      if (typeof footer === "string") { footer = $("<p/>").text(footer); }
      return asHtml(id, title, body, footer);
    };
  })();
  </script>"""
# What the manual-grading page (nbconvert's environment, which does not escape) inserts and a student can choose.
STUDENT_TEXT = ("student", "first_name", "last_name", "assignment_id", "notebook_id", "notebook_path",
                "submission_id", "filename")


def patched_template(source: str) -> str:
    """A Formgrader template with its script values as JSON and createModal taking text."""
    source = SCRIPT_VALUE.sub(r"\1{{ \2 | tojson }};", source)
    return UTILS_TAG.sub(lambda m: m.group(1) + MODAL_AS_TEXT, source)


def as_text(value) -> str:
    """`value` safe in HTML text, in a quoted attribute and in a double-quoted JavaScript string."""
    text = html.escape(str(value), quote=True)
    return text.replace("\\", "&#92;").replace("\n", "&#10;").replace("\r", "&#13;")


def environment(template_path: str):
    """An autoescaping Jinja environment over Formgrader's templates, each patched as it is loaded."""
    from jinja2 import Environment, FileSystemLoader

    class Patched(FileSystemLoader):
        def get_source(self, env, template):
            source, filename, uptodate = super().get_source(env, template)
            return patched_template(source), filename, uptodate

    return Environment(loader=Patched([template_path]), autoescape=True)


class TextResources:
    """Formgrader's exporter, given the manual-grading page's values as escaped text."""

    def __init__(self, exporter):
        self._exporter = exporter

    def from_filename(self, filename, resources=None, **kw):
        resources = {k: (as_text(v) if k in STUDENT_TEXT and v is not None else v)
                     for k, v in (resources or {}).items()}
        return self._exporter.from_filename(filename, resources=resources, **kw)

    def __getattr__(self, name):
        return getattr(self._exporter, name)


def patch() -> None:
    """Make Formgrader's handlers render through `environment` and `TextResources` (idempotent)."""
    from nbgrader.server_extensions.formgrader import base, handlers

    if getattr(base.BaseHandler, "_normlab_escaped", False):
        return
    env = environment(handlers.template_path)

    def render(self, name, **ns):
        return env.get_template(name).render(**ns)

    base.BaseHandler.render = render
    base.BaseHandler.exporter = property(lambda self: TextResources(self.settings["nbgrader_exporter"]))
    base.BaseHandler._normlab_escaped = True


def _jupyter_server_extension_points():
    return [{"module": "normlab_formgrader"}]


def _load_jupyter_server_extension(serverapp):
    from nbgrader.server_extensions import formgrader

    patch()
    formgrader.load_jupyter_server_extension(serverapp)
    serverapp.log.info("normlab: Formgrader loaded with its values escaped (normlab_formgrader)")
