# The two commands: `make demo` runs the main job on the embedded default; `make test` installs
# what is needed and runs every test. `make bench` runs the benchmarks.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[test,postgres]'
	touch $(STAMP)

# The demo tells its story from an empty workspace of its own (kept for exploring afterwards).
DEMO_HOME ?= .assay/demo-home

demo: $(STAMP)
	ASSAY_HOME=$(DEMO_HOME) $(BIN)/assay demo --reset

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .assay bench/.work
