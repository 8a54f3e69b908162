# Delivery Guarantees Lab — the commands the README names.
#   make lab    set everything up, then open JupyterLab on labs/
#   make test   set everything up, then run the whole test suite (real brokers included)
# Set-up is idempotent and cached: a second run downloads nothing.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
DEPS   := $(VENV)/.deps-installed
CACHE  := $(VENV)/.cache-filled
PYTEST_ARGS ?=

.PHONY: setup lab test lint matrix clean-cache clean

setup: $(CACHE)

$(DEPS): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed, found " + sys.version.split()[0]'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

# Kafka broker jars, Spark's Kafka connector and the broker class archive, in
# ~/.cache/deliverylab (DELIVERYLAB_CACHE to move it). Re-checked on every run: cheap.
$(CACHE): $(DEPS) FORCE
	$(BIN)/python -m deliverylab.setup
	@touch $@

lab: setup
	$(BIN)/jupyter lab --notebook-dir=labs

lint: $(DEPS)
	$(BIN)/ruff check .

test: setup lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The full anomaly matrix (a benchmark: hours on 2 cores); SEEDS/VALUES shrink it.
SEEDS  ?= 20
VALUES ?= 10000
matrix: setup
	$(BIN)/python -m deliverylab.matrix --seeds $(SEEDS) --values $(VALUES)

clean:
	rm -rf $(VENV) .pytest_cache

clean-cache:
	rm -rf $${DELIVERYLAB_CACHE:-$$HOME/.cache/deliverylab}

FORCE:
