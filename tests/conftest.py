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


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
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
