# normlab: every target bootstraps .venv from requirements.txt when it is missing or stale.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9]*.ipynb))
NBVAL  := $(BIN)/pytest -p no:cacheprovider --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg

.PHONY: venv lab book notebooks test test-unit test-notebooks test-book test-determinism bench exercises lint clean

$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -r requirements.txt
	touch $@

venv: $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/

# The static site: notebooks are executed with NORMLAB_STATIC=1, so every explorable
# is written out as a pre-rendered slider that works without a kernel.
book: $(STAMP)
	rm -rf _build/html _build/.doctrees _build/jupyter_execute
	NORMLAB_STATIC=1 MPLBACKEND=Agg $(BIN)/jupyter-book build . --path-output . -W -n --keep-going
	$(BIN)/python scripts/finish_site.py _build/html
	@echo "Site: _build/html/index.html  (view: $(BIN)/python -m http.server -d _build/html)"

# Re-execute every notebook in place (fresh kernel, no timings, no widget state) to refresh stored outputs.
notebooks: $(STAMP)
	for nb in $(NOTEBOOKS); do MPLBACKEND=Agg $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
	  --ExecutePreprocessor.record_timing=False --ExecutePreprocessor.store_widget_state=False \
	  --ExecutePreprocessor.timeout=300 "$$nb" || exit 1; done

lint: $(STAMP)
	$(BIN)/ruff check .

test-unit: $(STAMP)
	MPLBACKEND=Agg $(BIN)/pytest tests -m "not browser"

test-notebooks: $(STAMP)
	MPLBACKEND=Agg $(NBVAL) $(NOTEBOOKS)

test-book: book
	$(BIN)/pytest tests -m browser

# Everything CI checks.
test: lint test-unit test-notebooks test-book

test-determinism: $(STAMP)
	for run in 1 2 3; do MPLBACKEND=Agg $(NBVAL) $(NOTEBOOKS) || exit 1; done

bench: $(STAMP)
	MPLBACKEND=Agg $(BIN)/python -m scripts.bench

exercises: $(STAMP)
	$(BIN)/python scripts/make_exercises.py

clean:
	rm -rf _build .pytest_cache .hypothesis assignments/release assignments/autograded \
	  assignments/submitted assignments/feedback assignments/gradebook.db
