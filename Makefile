# The two commands: `make demo` runs the main job on the embedded default; `make test` installs
# what is needed and runs the fast tier of the tests (`make test-all`: every test). `make bench` runs the
# benchmarks; `make notebooks` opens the analyst notebooks in JupyterLab.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo lint test test-all bench notebooks harnesses clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[test,postgres]'
	touch $(STAMP)

# The demo tells its story from an empty workspace of its own (kept for exploring afterwards).
DEMO_HOME ?= .assay/demo-home

demo: $(STAMP)
	ASSAY_HOME=$(DEMO_HOME) $(BIN)/assay demo --reset

# Two tiers (tests/tiers.py decides from what each test uses): `make test` runs the fast one, the tests to run
# before every commit; `make test-all` adds the end-to-end tier (processes, real Prefect servers and workers,
# Dask, moto, Chromium, notebooks, failpoint kills, README walk-throughs, exam replays): what CI runs.
# One worker process per core (at most 4), each taking whole test files, so a module's shared fixtures are
# built once. `pytest -n 0` runs in one process.
PYTEST := $(BIN)/python -m pytest --numprocesses=auto --maxprocesses=4 --dist=loadfile

# ruff's rules are in pyproject.toml; both tiers lint first.
lint: $(STAMP)
	$(BIN)/ruff check .

test: lint
	$(PYTEST) -m "not e2e"

test-all: lint
	$(PYTEST) --file-durations=0

bench: $(STAMP)
	$(BIN)/python -m bench

# The analyst notebooks in JupyterLab, on the demo's workspace (`make demo` fills it) unless ASSAY_HOME
# names another. The kernelspec is rewritten to start this venv's Python, whatever `python` is on PATH.
# JupyterLab refuses to start as root (a container's default user) unless told `--allow-root`: given then only.
NOTEBOOKS_STAMP := $(VENV)/.notebooks-installed

$(NOTEBOOKS_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[notebooks]'
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name 'Python 3 (ipykernel)'
	touch $(NOTEBOOKS_STAMP)

notebooks: $(NOTEBOOKS_STAMP)
	@home="$$(realpath -m "$${ASSAY_HOME:-$(DEMO_HOME)}")"; \
	test -d "$$home" || { echo "no workspace at $$home: run \`make demo\` first, or set ASSAY_HOME to one"; exit 1; }; \
	root="$$(test "$$(id -u)" = 0 && echo ' --allow-root')"; \
	echo "ASSAY_HOME=$$home"; ASSAY_HOME="$$home" exec $(BIN)/jupyter lab$$root notebooks

# The real coding-agent CLIs the end-to-end tests replay exams with (offline, against the scripted model of
# fakes/model_server.py), pinned here and nowhere else; installed into .harnesses/ without a lock file. The
# tests find them in .harnesses/node_modules/.bin/ (or on PATH) and skip without them.
CLAUDE_CODE_VERSION := 2.1.97
CODEX_VERSION := 0.118.0
HARNESSES := .harnesses

harnesses:
	npm install --no-save --no-package-lock --no-audit --no-fund --prefix $(HARNESSES) \
		@anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION) @openai/codex@$(CODEX_VERSION)

clean:
	rm -rf $(VENV) .assay bench/.work
