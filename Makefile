# The venv is made on first use, so `make run` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean tools

# pip -qq: errors only; the build backend's warnings would push `make run`'s URL off the screen.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	@echo "installing slashgate and its dev tools into $(VENV) (a minute or two the first time)"
	$(BIN)/pip install -qq --upgrade pip
	$(BIN)/pip install -qq -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/slashgate serve

# The pi runtime's tests run the real pi (npm), the ACP tests a real fast-agent (PyPI, on
# Python 3.13); both installed locally, idempotently.
tools:
	bash scripts/install-pi.sh
	bash scripts/install-fast-agent.sh

test: $(STAMP) tools
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check contract gateway channels slashgate tests bench examples
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/run.py
	$(BIN)/python bench/journal.py
	$(BIN)/python bench/replicas.py
	$(BIN)/python bench/stall.py

clean:
	rm -rf $(VENV) .tools
