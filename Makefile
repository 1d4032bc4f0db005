# The two set-up commands of the README. Both create .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: demo test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[test,torch]'
	touch $@ $(VENV)/.installed

## make demo: install forge and tune attention on this CPU, then print the leaderboard
demo: $(VENV)/.installed
	$(BIN)/forge tune --config configs/demo.yaml --out results/demo-$$(date +%Y%m%d-%H%M%S)

## make test: install the test extras and run the test suite
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2 --dist worksteal $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
