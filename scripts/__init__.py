"""The project's tools (the Makefile runs them). Those that share code with others or with the tests import it
as `scripts.<module>` and run as modules, `python -m scripts.<name>`: `browser` (the Chromium they drive and the
site server), `lab_session` (a private JupyterLab and a page on it) and `toc` (the book's pages in order)."""
