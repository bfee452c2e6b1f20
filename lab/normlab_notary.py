"""The learners' notebook notary: a notebook that was run and saved opens trusted again, so its live views come back.

JupyterLab renders a widget output (an explorable's live face) only from a trusted notebook; an untrusted one shows
the output's static figure instead. Trust is kept by signing the notebook when it is saved: the notary signs only if
every output in it is trusted. jupyterlab-myst's notary (MySTNotebookNotary, installed by its server extension)
also counts the results of a Markdown cell's {eval} expressions, and trusts them only when the cell carries
`trusted: true` in its metadata. JupyterLab 4 never writes that for a Markdown cell (only code cells carry trust),
so a notebook whose text quotes a number was never signed, and reopening it, reloading the page or opening it in a
second tab showed static figures.

This notary judges a Markdown cell's results as nbformat judges a code cell's outputs: only a result that could
carry markup or script (anything other than plain text) needs the cell's explicit trust. A notebook changed
elsewhere still opens untrusted: its signature is not in this server's database.
"""

from __future__ import annotations

from jupyterlab_myst.notary import MySTNotebookNotary

PLAIN = {"text/plain"}


class NormlabNotary(MySTNotebookNotary):
    """MySTNotebookNotary, with a Markdown cell whose expression results are all plain text (or errors) trusted."""

    def _check_markdown_cell(self, cell, nbformat_version) -> bool:
        if cell["metadata"].pop("trusted", False):
            return True
        results = [e.get("result", {}) for e in cell["metadata"].get("user_expressions", [])]
        return all(r.get("status") == "error" or set(r.get("data", {})) <= PLAIN for r in results)


def _jupyter_server_extension_points():
    return [{"module": "normlab_notary"}]


def _load_jupyter_server_extension(app):
    """Put the notary on the contents manager (jupyterlab-myst keeps it: it is a MySTNotebookNotary)."""
    if not isinstance(app.contents_manager.notary, NormlabNotary):
        app.contents_manager.notary = NormlabNotary(parent=app.contents_manager)
