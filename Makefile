# blowfish_nb task runner. Two commands matter to a newcomer (see README.md):
#   make lab    set up everything and open the quickstart explorer in JupyterLab
#   make test   set up everything (venv, pip, npm build, Chromium) and run the whole suite

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.blowfish-installed
BUNDLE := blowfish_nb/widgets/static/canvas.js
PIP_QUIET := --quiet --disable-pip-version-check

.PHONY: lab labs docs test test-fast browser-deps js bench clean

# The editable install runs the package build hook: `npm install && npm run build`
# bundles js/ into $(BUNDLE). Re-run when the project's metadata or front end changes.
$(STAMP): pyproject.toml package.json package-lock.json $(wildcard js/*.js)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install $(PIP_QUIET) --upgrade pip
	$(PY) -m pip install $(PIP_QUIET) -e ".[dev]"
	@test -f $(BUNDLE) || { echo "the JS bundle $(BUNDLE) was not built" >&2; exit 1; }
	@touch $(STAMP)

# package.json declares no "type": Node applies the nearest package.json to every .js file below it, and
# .venv sits inside the checkout, so "type": "module" made JupyterLab's start-up check run its bundled
# CommonJS yarn.js as an ES module (it died on `Dynamic require of "util"` and `jupyter lab` printed the
# whole minified bundle before the URL). esbuild reads js/ as ES modules either way.

# Debian's Chromium for the browser tests (never a downloaded browser build).
browser-deps:
	@test -x /usr/bin/chromium || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update && apt-get install -y chromium; \
	  else sudo apt-get update && sudo apt-get install -y chromium; fi; }

js: $(STAMP)
	npm run build

# Serve the repository and open the quickstart (a file argument would re-root the server at notebooks/).
lab: $(STAMP)
	$(VENV)/bin/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) --ServerApp.root_dir=. \
	  --LabApp.default_url=/lab/tree/notebooks/quickstart.ipynb

# `make test` builds the labs without otter's own run of each solution: tests/notebooks/test_labs.py runs every
# solution and student version anyway. A teacher's `make labs` keeps that run.
LABS_FLAGS ?=

# Teaching labs: student and solution versions (otter assign) of every notebooks/labs/source/*.ipynb, into build/labs/,
# each autograder zip with a wheel of this package (build/labs/wheel) and the exact pin that installs it from the zip.
labs: $(STAMP)
	rm -rf build/labs/wheel
	$(PY) -m pip wheel $(PIP_QUIET) --no-deps -w build/labs/wheel .
	$(PY) -m blowfish_nb.labs.build build/labs --wheel build/labs/wheel/blowfish_nb-*.whl $(LABS_FLAGS)

# The documentation site, warnings as errors, into build/docs/html (the labs' student versions are its course section).
# -j auto: Sphinx reads (executing the guide's notebooks) and writes on every core. Same build, notebook cache warm:
# 36 s of CPU either way, 90 s of wall time with -j 2 against 221 s serial (suite33, shared 2-core machine, load 8-15).
docs: labs
	$(PY) -m sphinx -W --keep-going -j auto -b html docs build/docs/html

# Unit and notebook tests on every core (pytest-xdist), then the browser tests one at a time (each drives
# its own JupyterLab and Chromium, which would fight over two cores).
test: $(STAMP) browser-deps
	$(MAKE) docs LABS_FLAGS=--no-run-tests
	# one BLAS thread per xdist worker: two workers on two cores each spawning OpenBLAS threads made small eigh/solve
	# calls 4-5x slower (measured on the optimiser choice tests)
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(PY) -m pytest -m "not browser" -n auto --durations=30
	$(PY) -m pytest -m browser --durations=15

# Unit and notebook tests only (no browser).
test-fast: $(STAMP)
	$(PY) -m pytest -m "not browser"

clean:
	rm -rf $(VENV) node_modules blowfish_nb/widgets/static test-artifacts .pytest_cache
