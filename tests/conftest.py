"""How tests are dealt to the xdist workers (`make test-unit` and `make test-browser` run `--dist loadgroup`).

Every test belongs to a group (`group` below), and a group runs on one worker, in one process, so module- and
session-scoped fixtures are built once per group:

- by default a test file is its own group (what `--dist loadfile` did);
- SPLIT files (independent, slow, parametrized tests with nothing expensive shared between them) are cut into
  a few groups by test id, or into one group per test (None), so that the workers finish at about the same
  time. The browser tests mostly wait (for Chromium, page loads, MathJax), so `make test-browser` runs them on
  more workers than there are cores; each worker starts one Chromium and one server for all its tests (the
  session fixtures below), and the reports they write into _build/screenshots/report.txt are merged row by
  row (browser_support).

Groups are handed out in collection order (`--no-loadscope-reorder`); the slowest groups are collected first
(FIRST), so that no long group starts last.
"""

from __future__ import annotations

import re
import zlib

import pytest

# Files sharing one group. (The nbgrader course files are NOT grouped: their fixtures take minutes of mostly
# subprocess time, and one worker grading them all in turn became the slowest; apart, the exchange and the
# pipeline start first on different workers, each releasing the course once for its process: grading_support.)
GROUPS: dict[str, str] = {}
# file -> number of groups its tests are dealt into (by a stable hash of the test id)
SPLIT = {
    "test_browser.py": None,
    "test_site_reading.py": None,
    "test_grading_judge.py": 2,  # the 500-seed property test is cut into chunks: they go to both workers
    "test_portable.py": None,     # each configuration is one long subprocess
}
# Collected first, in this order (the rest keep pytest's order after them); within a file, the slowest tests first.
SLOWEST = ["test_page_on_a_laptop", "test_page_on_a_phone"]
FIRST = ["test_grading_pipeline.py", "test_grading_exchange.py", "test_grading_judge.py",
         "test_assignments.py", "test_grading_sandbox.py", "test_catalog.py", "test_site_reading.py", "test_browser.py"]


# files whose tests are grouped by the explorable they are about (the first word of the test's parameters), so that
# each explorable's frames are drawn once, in one process
BY_EXPLORABLE = {"test_catalog.py"}


# files whose tests each run one notebook under an edit of its parameters cell, grouped by that notebook (the first
# word of the test's parameters, e.g. [02_the_problem-draw0]) across the files: a group's runs follow one another in
# one process, in one kernel (the `notebook_kernel` fixture below), as a learner's edits and Run All do
BY_NOTEBOOK = {"test_parameters.py", "test_parameter_space.py"}
NOTEBOOK_ID = re.compile(r"\[([0-9]{2}_[a-z0-9_]+)-")


def group(nodeid: str) -> str:
    """The group of a test, from its id."""
    name = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    if name in GROUPS:
        return GROUPS[name]
    if name in BY_NOTEBOOK and (m := NOTEBOOK_ID.search(nodeid)):
        return f"notebook-{m.group(1)}"
    if name in BY_EXPLORABLE and "[" in nodeid:
        return f"{name}-{re.match(r'[a-z0-9_]+', nodeid.split('[', 1)[1]).group(0)}"
    if name in SPLIT:
        if SPLIT[name] is None:
            return nodeid
        return f"{name}-{zlib.crc32(nodeid.encode()) % SPLIT[name]}"
    return name


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` with the groups above. (xdist's own loadgroup reads `xdist_group` marks into the test
    ids, which pytest 9 no longer lets it rewrite, so its groups would be single tests.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group(nodeid)

    return GroupScheduling(config, log)


# -- areas and the quick loop ---------------------------------------------------------------------------------------
# Every test carries the marker of its area, from its file's name, so that a contributor runs a subset by name
# (`pytest -m maths`, `-m "grading and not browser"`); tests/test_layers.py fails for a test file that no pattern
# here matches. `quick` marks the one-minute loop, `make check`: the maths, the norms, the mechanism, one state per
# explorable and the grading judge, without their slowest tests (QUICK_EXCEPT).
AREAS = {
    "maths": ["test_maths.py", "test_norm_registry.py", "test_geometry.py", "test_backward_complete.py",
              "test_norm_axes_block.py", "test_batch_norm_contrast.py", "test_low_precision.py", "test_transformer.py",
              "test_model_norms.py",
              "test_scale_*.py"],
    "mechanism": ["test_mechanism.py", "test_static.py", "test_catalog.py", "test_threads.py", "test_quick_*.py",
                  "test_bench.py"],
    "notebooks": ["test_parameter*.py", "test_prose_numbers.py", "test_notebook_hygiene.py",
                  "test_executed_notebooks.py", "test_questions.py"],
    "training": ["test_train*.py", "test_experiments*.py", "test_portable.py", "test_spread.py"],
    "jupyterlab": ["test_lab*.py", "test_live.py"],
    "site": ["test_browser*.py", "test_site_*.py", "test_search.py", "test_pdf.py", "test_reader_*.py",
             "test_static_figures.py", "test_finish_site.py", "test_make_site.py", "test_reading_*.py",
             "test_folded_*.py"],
    "grading": ["test_grading_*.py", "test_assignments.py", "test_grades_lms.py", "test_classroom.py"],
    "project": ["test_layers.py", "test_references.py", "test_git_notebooks.py", "test_quiet_tools.py",
                "test_page_links.py"],
}
QUICK = ["test_maths.py", "test_norm_registry.py", "test_geometry.py", "test_backward_complete.py",
         "test_batch_norm_contrast.py", "test_transformer.py", "test_model_norms.py", "test_layers.py",
         "test_references.py", "test_train_arguments.py", "test_quick_explorables.py", "test_grading_judge.py",
         "test_page_links.py"]
QUICK_EXCEPT = ["test_reference_gets_full_marks_for_500_random_seeds", "test_a_slow_answer_is_stopped"]


def area(filename: str) -> str | None:
    """The area of a test file, from AREAS (None: no pattern matches it)."""
    from fnmatch import fnmatch

    return next((name for name, patterns in AREAS.items() if any(fnmatch(filename, p) for p in patterns)), None)


def pytest_configure(config):
    for name in AREAS:
        config.addinivalue_line("markers", f"{name}: the {name} tests (tests/conftest.py, AREAS)")
    config.addinivalue_line("markers", "quick: the one-minute loop of `make check` (tests/conftest.py, QUICK)")


def _mark_areas(items):
    for item in items:
        name = item.path.name
        if (a := area(name)) is not None:
            item.add_marker(a)
        test = getattr(item, "originalname", item.name)
        if name in QUICK and not any(test.startswith(slow) for slow in QUICK_EXCEPT):
            item.add_marker("quick")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    _mark_areas(items)
    rank = {name: i for i, name in enumerate(FIRST)}
    slow = {name: i for i, name in enumerate(SLOWEST)}
    items.sort(key=lambda item: (rank.get(item.path.name, len(FIRST)),  # stable: pytest's order within a rank
                                 slow.get(getattr(item, "originalname", item.name), len(SLOWEST))))


@pytest.fixture(scope="session")
def notebook_kernel():
    """kernel(name): the kernel (scripts/refresh_notebooks.py's Kernel) in which this process runs notebook `name`.
    Its first run gets a fresh kernel, each later one the same kernel, emptied first (a learner's next edit and Run
    All). A group's tests run one after another, so the two kernels used last are kept and older ones stopped."""
    from scripts.refresh_notebooks import Kernel

    kernels: dict = {}

    def kernel(name: str):
        if name not in kernels:
            kernels[name] = Kernel()
            while len(kernels) > 2:
                kernels.pop(next(iter(kernels))).close()
        return kernels[name]

    yield kernel
    for k in kernels.values():
        k.close()


# -- the browser tests' fixtures (tests/test_browser.py, tests/test_site_reading.py) ------------------------------
# One site server and one Chromium per test process (an xdist worker), whichever modules its tests come from.
@pytest.fixture(scope="session")
def site():
    from browser_support import require_site

    return require_site()


@pytest.fixture(scope="session")
def server(site):
    from browser_support import SiteServer

    with SiteServer(site) as srv:
        yield srv


@pytest.fixture(scope="session")
def browser():
    from browser_support import chromium_or_skip, launch

    chromium_or_skip()  # before importing playwright: skip (or fail) with the reason when there is no browser
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = launch(pw)
        yield b
        b.close()


def _tab_opener(browser, server, site, **defaults):
    from browser_support import Tab

    opened = []

    def _open(page_path: str, **kw):
        tab = Tab(browser, server, site, page_path, **{**defaults, **kw})
        opened.append(tab)
        return tab

    return _open, opened


@pytest.fixture
def reader(browser, server, site):
    """Open a page (viewport, dark, phone as keywords) and let it settle: MathJax done, network idle."""
    _open, opened = _tab_opener(browser, server, site)
    yield _open
    for tab in opened:
        tab.close()


@pytest.fixture
def visit(browser, server, site):
    """Open a page at 1280x900 and return once it has fired `load` (for tests that wait for what they need)."""
    _open, opened = _tab_opener(browser, server, site, settle=False)
    yield _open
    for tab in opened:
        tab.close()


@pytest.fixture(autouse=True)
def _the_library_stays_one_copy():
    """Fail a test that leaves a second copy of a normlab_core module behind (two Run classes break isinstance)."""
    import sys

    def ours():
        return {name: mod for name, mod in sys.modules.items() if name.split(".")[0] == "normlab_core"}

    before = ours()
    yield
    after = ours()
    swapped = sorted(name for name, mod in before.items() if after.get(name, mod) is not mod)
    package = sys.modules.get("normlab_core")
    stale = sorted(name for name, mod in after.items() if name.count(".") == 1 and package is not None
                   and getattr(package, name.split(".")[1], mod) is not mod)
    assert not swapped and not stale, f"normlab_core modules replaced during the test: {swapped + stale}"
