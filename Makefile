# The venv is made on first use, so `make run` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-long lint bench clean tools pi fast-agent claude-agent-acp synapse

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
# Python 3.13) and the real claude-agent-acp (npm, its model a local mock); all installed
# locally, idempotently (well under a second when already there); the Matrix tests a real
# Synapse homeserver (PyPI, in its own venv).
tools: pi fast-agent claude-agent-acp synapse
pi:
	bash scripts/install-pi.sh
fast-agent:
	bash scripts/install-fast-agent.sh
claude-agent-acp:
	bash scripts/install-claude-agent-acp.sh
synapse:
	bash scripts/install-synapse.sh

# The whole suite on TEST_WORKERS pytest-xdist workers (0: in one process), one more than the
# cores: many tests wait on subprocesses and sockets. Tests that share a resource carry an
# xdist_group mark and run on one worker. The venv and the agents install at once (they are
# independent). docs/testing.md has the timings and how to run one area alone.
TEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print((os.cpu_count() or 1) + 1)')
test:
	@$(MAKE) --no-print-directory -j4 $(STAMP) tools
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup

# make test with the fault-injection run at CI length: more gateway lives SIGKILLed.
test-long:
	FAULT_CYCLES=30 $(MAKE) --no-print-directory test

lint: $(STAMP)
	$(BIN)/ruff check contract gateway channels slashgate tests bench examples
	$(BIN)/ruff format --check contract gateway channels slashgate tests bench examples
	$(BIN)/mypy

bench: $(STAMP) synapse
	$(BIN)/python bench/run.py
	$(BIN)/python bench/journal.py
	$(BIN)/python bench/stores.py
	$(BIN)/python bench/replicas.py
	$(BIN)/python bench/pacing.py
	$(BIN)/python bench/latency.py
	$(BIN)/python bench/streamed.py
	$(BIN)/python bench/stall.py
	$(BIN)/python bench/discord.py
	$(BIN)/python bench/matrix.py
	$(BIN)/python bench/soak.py --quick

clean:
	rm -rf $(VENV) .tools
