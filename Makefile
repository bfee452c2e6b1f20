# normlab: every target bootstraps .venv from requirements.txt when it is missing or stale.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9]*.ipynb))
NBVAL  := $(BIN)/pytest -p no:cacheprovider --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg

.PHONY: venv classroom-deps classroom test-classroom grades-lms lab lab-instructor book pdf notebooks check test test-unit test-explore test-notebooks test-book test-browser test-pdf test-executed test-lab test-portable test-determinism screenshots reading-budget bench experiments exercises grade lint clean clean-grading

# lab-settings/overrides.json: JupyterLab defaults for every server run from .venv (make lab and the JupyterLab tests):
# notebooks render all their cells (windowingMode none); with windowed rendering, jupyterlab-myst (the MyST
# markdown renderer that evaluates the notebooks' {eval} prose numbers) throws on Run All in long notebooks.
# Markdown files open in JupyterLab's Markdown preview (a notebook's link to a glossary entry lands there rendered).
$(STAMP): requirements.txt pyproject.toml lab-settings/overrides.json lab-settings/ipython_kernel_config.json
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -r requirements.txt
	mkdir -p $(VENV)/share/jupyter/lab/settings
	cp lab-settings/overrides.json $(VENV)/share/jupyter/lab/settings/overrides.json
	mkdir -p $(VENV)/etc/ipython
	cp lab-settings/ipython_kernel_config.json $(VENV)/etc/ipython/ipython_kernel_config.json
	$(BIN)/jupyter server extension disable nbdime --sys-prefix >/dev/null 2>&1
	$(BIN)/jupyter labextension disable nbdime-jupyterlab --level=sys_prefix >/dev/null 2>&1
	$(BIN)/python scripts/git_notebooks.py
	touch $@

venv: $(STAMP)

# The classroom (book/instructors.md, "Running it for a class"): JupyterHub and its pinned additions into .venv, and
# configurable-http-proxy from npm into classroom/node_modules (package.json with its lock file, installed by npm ci).
CLASSROOM_STAMP := $(VENV)/.classroom
$(CLASSROOM_STAMP): $(STAMP) classroom/requirements.txt classroom/package.json classroom/package-lock.json
	$(BIN)/pip install -r classroom/requirements.txt
	cd classroom && npm ci --no-audit --no-fund
	touch $@

classroom-deps: $(CLASSROOM_STAMP)

# A hub on 127.0.0.1 for an instructor to try (as root: it creates an instructor's and three students' accounts,
# and deletes them on Ctrl-C); prints the URL and the accounts. CLASSROOM_ARGS="--students 5 --prefix cls-".
classroom: $(CLASSROOM_STAMP)
	$(BIN)/python -m scripts.classroom $(CLASSROOM_ARGS)

# The whole classroom path in Chromium (tests/test_classroom.py): as root; skips otherwise, or without chromium
# (fails instead under NORMLAB_REQUIRE_BROWSER=1).
test-classroom: $(CLASSROOM_STAMP)
	$(BIN)/pytest -p no:cacheprovider $(DURATIONS) tests/test_classroom.py -m classroom

# assignments/grades.csv as a Canvas gradebook CSV and a Moodle grade-import CSV in _build/lms/
# (scripts/grades_lms.py; ROSTER=file.csv adds Canvas ids, sections and emails; LMS_ARGS="--grades F --out D").
grades-lms: $(STAMP)
	$(BIN)/python scripts/grades_lms.py $(if $(ROSTER),--roster $(ROSTER)) $(LMS_ARGS)

# JupyterLab on the repository root, opening the notebooks folder (links to the glossary and references work).
# Learners: nbgrader's tools off. Instructors: `make lab-instructor` (scripts/lab.py; book/instructors.md).
lab: $(STAMP)
	$(BIN)/python scripts/lab.py $(LAB_ARGS)

lab-instructor: $(STAMP)
	$(BIN)/python scripts/lab.py --instructor $(LAB_ARGS)

# The site as last built by `make book`: the targets that read it (pdf, screenshots, bench) rebuild it first when any
# of its sources is newer than this stamp (the last thing `make book` writes), not merely when it is missing.
SITE_STAMP := _build/html/.normlab-built
SITE_SOURCES := _config.yml _toc.yml CITATION.cff $(shell find notebooks book normlab_core scripts -type f \
  -not -path '*/__pycache__/*' -not -path '*/.ipynb_checkpoints/*' 2>/dev/null)
$(SITE_STAMP): $(STAMP) $(SITE_SOURCES)
	$(MAKE) --no-print-directory book

# The static site: notebooks are executed with NORMLAB_STATIC=1, so every explorable
# is written out as a pre-rendered slider that works without a kernel.
book: $(STAMP)
	rm -rf _build/html _build/.doctrees _build/jupyter_execute _build/nl-frames
	MPLBACKEND=Agg $(BIN)/python -m scripts.intro_figure
	MPLBACKEND=Agg $(BIN)/python -m scripts.models_figure
	NORMLAB_STATIC=1 NORMLAB_FRAMES=$(CURDIR)/_build/nl-frames MPLBACKEND=Agg $(BIN)/jupyter-book build . --path-output . -W -n --keep-going
	$(BIN)/python scripts/place_frames.py _build/html _build/nl-frames
	$(BIN)/python scripts/finish_site.py _build/html
	touch $(SITE_STAMP)
	@echo "Site: _build/html/index.html  (view: $(BIN)/python -m http.server -d _build/html)"

# The PDF edition: every page of the built site, in the order of _toc.yml, printed by Debian's Chromium with
# the book's print stylesheet, joined into one PDF with bookmarks and internal links (scripts/make_pdf.py).
pdf: $(STAMP) $(SITE_STAMP)
	$(BIN)/python -m scripts.make_pdf _build/html -o _build/pdf/normlab.pdf

# Re-execute the section notebooks in place (fresh kernel, no timings, no widget state) to refresh their
# stored outputs. The exercises notebook is generated by `make exercises` instead.
notebooks: $(STAMP)
	MPLBACKEND=Agg $(BIN)/python scripts/refresh_notebooks.py $(filter-out notebooks/10_%,$(NOTEBOOKS))

lint: $(STAMP)
	$(BIN)/ruff check .

# Two workers (the machine has two cores). Tests are dealt to the workers in groups (tests/conftest.py: a file,
# the nbgrader course files together, or single slow tests), the slowest groups first.
XDIST := -n 2 --dist loadgroup --no-loadscope-reorder
# The browser tests spend most of their time waiting for Chromium, so they run on more workers than cores.
XDIST_BROWSER := -n 3 --dist loadgroup --no-loadscope-reorder
# Every suite of `make test` (and of CI) ends with its twenty slowest tests (setup, call and teardown each), so
# that a log shows where the time went (notes/test-suite-time.md), and with each skipped test and why (-rs).
DURATIONS := --durations=20 -rs

# The quick loop, about a minute on two cores: lint and the tests marked `quick` (tests/conftest.py, QUICK: the maths,
# the norms, one state per explorable, the grading judge). `make test-unit` runs every unit test; a subset by area:
# `.venv/bin/pytest -m maths` (the areas are AREAS in tests/conftest.py; CONTRIBUTING.md has the table).
check: lint
	MPLBACKEND=Agg $(BIN)/pytest -n 2 -q tests -m quick

# (tests/test_quick_explorables.py is make check's one state per explorable; test_catalog.py here draws them all.)
test-unit: $(STAMP)
	MPLBACKEND=Agg $(BIN)/pytest $(XDIST) $(DURATIONS) tests --ignore=tests/test_quick_explorables.py -m "not browser and not lab and not pdf and not portable and not classroom and not book"

# Property-based exploration of the parameters cells (tests/test_parameter_explore.py, not part of `make test`):
# hypothesis draws values inside each declaration of normlab_core/parameters.py and runs the notebook on each (fixed
# seed). NORMLAB_EXPLORE_EXAMPLES=N sets the examples per notebook (default 12); `make test` runs only the corners.
test-explore: $(STAMP)
	NORMLAB_EXPLORE=1 MPLBACKEND=Agg $(BIN)/pytest -p no:cacheprovider tests/test_parameter_explore.py $(EXPLORE_ARGS)

test-notebooks: $(STAMP)
	MPLBACKEND=Agg $(NBVAL) $(NOTEBOOKS)

# After the build, the browser tests, the PDF edition (made and checked) and the comparison of the notebooks' stored
# outputs with the build's own execution of them (test-executed) run side by side.
test-book: book
	$(MAKE) --no-print-directory test-browser test-pdf test-executed

# Every notebook's stored outputs against the copy the book executed (_build/jupyter_execute), compared as nbval
# compares (tests/test_executed_notebooks.py): `make test` executes each notebook once for both.
test-executed: $(STAMP)
	$(BIN)/pytest -p no:cacheprovider $(DURATIONS) tests/test_executed_notebooks.py -m book

# The browser tests on the site as it is (test-book builds it first).
test-browser: $(STAMP)
	$(BIN)/pytest $(XDIST_BROWSER) $(DURATIONS) tests -m browser

# Full-page screenshots of every page at 1280x900 and 390x844 (_build/screenshots/<size>/ and a copy of each in
# _build/screenshots/), taken by the browser tests' page reads on the site as built; `make test` takes the
# screenshots of each explorable and of each page's first screen, and leaves the full pages to this target.
screenshots: $(STAMP) $(SITE_STAMP)
	NORMLAB_PAGE_SHOTS=1 $(BIN)/pytest $(XDIST_BROWSER) tests/test_site_reading.py -m browser -k "test_page_on_a"

# The reading budgets of every page of the site as built, as a table (scripts/reading_budget.py; make test checks
# them in tests/test_reading_budget.py). Exits 1 when a page is over a budget it is not declared to exceed.
reading-budget: $(STAMP) $(SITE_STAMP)
	$(BIN)/python -m scripts.reading_budget _build/html

# The PDF edition of the site as built, then its checks (tests/test_pdf.py: pages, bookmarks, text, links).
test-pdf: $(STAMP)
	$(BIN)/python -m scripts.make_pdf _build/html -o _build/pdf/normlab.pdf
	$(BIN)/pytest -p no:cacheprovider $(DURATIONS) tests/test_pdf.py -m pdf

# The live widgets in a private JupyterLab driven by chromium (tests/test_lab.py; a temporary copy of notebooks/).
# One test process: two (each with its own JupyterLab and Chromium) took more CPU than they saved in wall time
# beside the other suites of `make test` on two cores.
test-lab: $(STAMP)
	MPLBACKEND=Agg $(BIN)/pytest $(DURATIONS) tests -m lab

# Everything CI checks: lint, then test-unit, test-lab and test-book (book, then test-browser, test-pdf and
# test-executed), all side by side (-O keeps each one's output together). None of them keeps the two cores busy
# alone: the book runs its notebooks one cell at a time in one kernel, the JupyterLab test (which needs no built site)
# and the browser tests mostly wait for Chromium and kernels; the unit tests fill the gaps. The browser tests start
# as soon as the book is built. The notebooks are executed once for the book and nbval's comparison both
# (test-executed); `make test-notebooks` runs nbval itself, and `make test-determinism` three times.
test: lint
	$(MAKE) --no-print-directory -j4 -Otarget test-unit test-lab test-book

# The stored outputs, frames and runs under other arithmetic kernels than the machine's own (tests/test_portable.py):
# OpenBLAS's Prescott kernel, 1 and 2 BLAS threads, numpy's baseline loops. .ci/run calls it after `make test`.
test-portable: $(STAMP)
	$(BIN)/pytest $(XDIST) $(DURATIONS) tests -m portable

test-determinism: $(STAMP)
	for run in 1 2 3; do MPLBACKEND=Agg $(NBVAL) $(NOTEBOOKS) || exit 1; done

bench: $(STAMP) $(SITE_STAMP)
	MPLBACKEND=Agg $(BIN)/python -m scripts.bench
	$(BIN)/python scripts/bench_grading.py
	MPLBACKEND=Agg $(BIN)/python -m scripts.bench_browser

# The training lab's runs ("Does it train?"): every study of scripts/experiments.py as jobs on Dask distributed, with a
# progress bar; writes normlab_core/data/experiments.json.gz (the book only reads it). By default a LocalCluster of one
# single-threaded worker process per core (about 30 min on two quiet cores); DASK_SCHEDULER=tcp://host:8786 sends the
# jobs to a running cluster instead, whose scheduler and workers (started with --nthreads 1) need this tree's code
# and requirements (README, "Training runs"). Finished runs are cached in _build/experiments-cache/, each as it
# arrives, so an interrupted run resumes.
experiments: $(STAMP)
	MPLBACKEND=Agg $(BIN)/python -m scripts.experiments

exercises: $(STAMP)
	$(BIN)/python scripts/make_exercises.py

# Grade the new or changed submissions in assignments/submitted/ (each in a sandbox), write feedback and grades.csv,
# list cells put back, submissions to review and what failed to grade. STUDENT=, FORCE=1, J=, UNSAFE=1 pass through.
grade: $(STAMP)
	$(MAKE) -C assignments grade PYTHON=$(abspath $(BIN)/python)

# Build outputs only: a course's submissions, gradebook (manual grades included), feedback and grades stay.
clean:
	rm -rf _build .pytest_cache .hypothesis

# Everything the course has collected and graded: asks for CONFIRM=yes, because manual grades go with it.
clean-grading:
	@test "$(CONFIRM)" = yes || { echo "this deletes assignments/submitted, gradebook.db (manual grades included), autograded, feedback, grades.csv, logs, downloaded and release: run make clean-grading CONFIRM=yes"; exit 2; }
	rm -rf assignments/release assignments/autograded assignments/submitted assignments/feedback \
	  assignments/gradebook.db assignments/downloaded assignments/grades.csv assignments/logs assignments/.staged
