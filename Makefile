# Two commands on a fresh machine: `make book` and `make test`. Each sets up .venv itself.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NOTEBOOKS := $(sort $(wildcard book/*.ipynb))
NBVAL  := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=300

.PHONY: setup book book-student test unit nbval browser-deps browser jupyter-ui reader lab notebook outputs bench student grader dist clean

setup: $(STAMP)

# nbgrader (make grader) runs from the command line; its Jupyter extensions stay off in make lab
$(STAMP): requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation --config-settings editable_mode=compat -e .
	$(BIN)/jupyter server extension disable --sys-prefix $(addprefix nbgrader.server_extensions.,\
	  formgrader validate_assignment assignment_list course_list) >/dev/null
	$(BIN)/jupyter labextension disable --level=sys_prefix @jupyter/nbgrader >/dev/null
	touch $(STAMP)

## book: build the HTML into _build/html, executing every notebook, warnings as errors
book: $(STAMP)
	rm -rf _build/html _build/jupyter_execute _build/.doctrees
	GPUMODEL_BOOK=1 $(BIN)/jupyter-book build . --warningiserror --nitpick --keep-going

## test: unit and property tests, strict nbval on every chapter, then the book and the browser tests
## (the built book in Chromium; every chapter opened in JupyterLab and one in Notebook 7)
test: $(STAMP) browser-deps
	$(BIN)/pytest tests -q --ignore=tests/test_browser.py --ignore=tests/test_jupyter_ui.py
	env -u GPUMODEL_BOOK $(BIN)/pytest $(NBVAL) -q $(NOTEBOOKS)
	$(MAKE) book
	GPUMODEL_REQUIRE_BROWSER=1 $(BIN)/pytest tests/test_browser.py tests/test_jupyter_ui.py -q

## jupyter-ui: every chapter opened, without running it, in JupyterLab and one in Notebook 7 (headless)
jupyter-ui: $(STAMP) browser-deps
	GPUMODEL_REQUIRE_BROWSER=1 $(BIN)/pytest tests/test_jupyter_ui.py -q

browser-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian chromium for the browser test"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

## reader: reader copies of the chapters, numbers, terms and citations written into the text
reader: $(STAMP)
	rm -rf _build/reader
	$(BIN)/python -m gpumodel.student --reader _build/reader $(NOTEBOOKS)

## lab: JupyterLab on the reader copies, widgets live, MyST markup rendered (jupyterlab-myst)
lab: reader
	env -u GPUMODEL_BOOK $(BIN)/jupyter lab _build/reader/

## notebook: the same in the Jupyter Notebook 7 interface
notebook: reader
	env -u GPUMODEL_BOOK $(BIN)/jupyter notebook _build/reader/

## outputs: re-execute the notebooks in place after an intended model change; review `git diff book/`
outputs: $(STAMP)
	env -u GPUMODEL_BOOK $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
	  --ExecutePreprocessor.timeout=600 $(NOTEBOOKS)
	$(BIN)/python tools/tag_solutions.py $(NOTEBOOKS)
	$(BIN)/python tools/clean_notebooks.py $(NOTEBOOKS)

## book-student: the student edition of the HTML book, without solutions, into _build/student-html
book-student: $(STAMP)
	rm -rf _build/student-html
	$(BIN)/python -m gpumodel.student --book _build/student-src
	cd _build/student-src && GPUMODEL_BOOK=1 $(abspath $(BIN))/jupyter-book build . \
	  --warningiserror --nitpick --keep-going
	mv _build/student-src/_build/html _build/student-html

## student: each chapter without its solutions and outputs, into _build/student (to hand out);
## each exercise with a numeric answer gets an answer cell and a check cell (form, unit, range)
student: $(STAMP)
	rm -rf _build/student
	$(BIN)/python -m gpumodel.student _build/student $(NOTEBOOKS)

## grader: an nbgrader course in _build/grader (source/: solutions and hidden tests; release/);
## grade a folder SUBMISSIONS/<student>/<chapter>.ipynb offline, without Docker, into a CSV with
##   $(BIN)/python -m gpumodel.grading grade _build/grader SUBMISSIONS grades.csv
grader: $(STAMP)
	rm -rf _build/grader
	$(BIN)/python -m gpumodel.grading course _build/grader $(NOTEBOOKS)

## dist: a wheel of gpumodel with its data, into dist/ (pip install "dist/gpumodel-*.whl[charts]")
dist: $(STAMP)
	rm -rf dist build
	$(BIN)/pip wheel --quiet --no-deps --no-build-isolation --wheel-dir dist .

## bench: callback latency, sweep speed and import time into _build/bench.json; then the live
## panels' redraw in a real JupyterLab (headless Chromium), one per chapter, into _build/lab_redraw.json
bench: $(STAMP) browser-deps
	mkdir -p _build
	$(BIN)/python -m gpumodel.bench _build/bench.json
	$(BIN)/python tools/lab_redraw.py _build/lab_redraw.json

clean:
	rm -rf _build dist build
