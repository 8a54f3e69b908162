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
# Offline set-up from a folder made by `make bundle`: `make setup BUNDLE=path` (or
# DELIVERYLAB_BUNDLE=path): pip installs from its wheels only, the jars come from it.
BUNDLE ?= $(DELIVERYLAB_BUNDLE)
BUNDLE_DIR ?= build/bundle
ifneq ($(strip $(BUNDLE)),)
export PIP_NO_INDEX := 1
export PIP_FIND_LINKS := $(abspath $(BUNDLE))/wheels
endif

.PHONY: setup lab test test-cold lint course book matrix clean-cache clean doctor bundle \
	classroom classroom-plan

setup: $(CACHE)

$(DEPS): pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed, found " + sys.version.split()[0]'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

# The pinned jars (broker, Spark's Kafka connector, tools, Connect, JDBC drivers; no
# Maven needed) and the broker class archive, in ~/.cache/deliverylab
# (DELIVERYLAB_CACHE to move it). Checksums re-checked on every run: cheap.
# The lab's own modules compiled to bytecode once: a Python told not to write it
# (PYTHONDONTWRITEBYTECODE, as in some CI images, or a folder it may not write) compiles
# every module again in each of the hundreds of short child processes a grade or the
# test suite starts (~0.17 s each); it still reads bytecode that exists. Up to date, this
# step takes a quarter of a second.
$(CACHE): $(DEPS) FORCE
	$(if $(strip $(BUNDLE)),$(BIN)/python -m deliverylab.classroom.setup.bundle install $(BUNDLE))
	$(BIN)/python -m compileall -q -j 0 lib
	$(BIN)/python -m deliverylab.classroom.setup.install
	@touch $@

# Bound to 127.0.0.1: a lab server must not be reachable from the network. The venv's
# bin/ leads PATH so that Kafka's tools (kafka-topics, ...) work in its terminals.
lab: setup
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/jupyter lab --notebook-dir=labs --ServerApp.ip=127.0.0.1 \
		$(if $(filter 0,$(shell id -u)),--allow-root,)

lint: $(DEPS)
	$(BIN)/ruff check .

# Three workers: since the short-lived JVMs run C1 only (stop 39), the suite is no
# longer CPU-bound (two workers kept the machine 65 % busy); a cold run with three was
# 74 % busy, its parallel part 1319 s against 1652 s with two, all green (2026-11-28,
# docs/measurements.md). Its chapters and the grader's calibration are taken first
# (longest first, one test at a time to whichever worker is free: scripts/test-suite.sh).
# Tests marked `solo` (throughput ratios, a look at every container on the engine, the
# hubs, /tmp compared before and after) run after it: chapter 08 alone, then two lanes side
# by side (tests/lanes.py); the lab image only they need is built beside the parallel
# part. PYTEST_ARGS narrows both parts.
TEST_WORKERS ?= 3
# The set-up runs inside the script, beside the first part of the lab image's build.
test:
	SETUP="$(MAKE) --no-print-directory setup lint" \
	    bash scripts/test-suite.sh $(abspath $(BIN))/python $(TEST_WORKERS) $(PYTEST_ARGS)

# make test as on a machine that has never run the lab (what CI runs): an empty private
# cache and image tags of its own, removed afterwards (scripts/cold-run.sh says why).
test-cold:
	bash scripts/cold-run.sh $(MAKE) test

# Every chapter headless (papermill) into results/course/ + HTML, then one summary table.
# BACKEND=docker runs every chapter's brokers in containers, BACKEND=local as JVMs.
BACKEND ?=
course: setup
	$(BIN)/python -m deliverylab.classroom.course --out results/course $(if $(BACKEND),--backend $(BACKEND))

# The course as a static book (contents, a page per chapter, search) that opens offline,
# from the chapters `make course` executed: nothing runs again. COURSE=folder builds it
# from other executed chapters (e.g. test-artifacts/labs after the chapter tests).
COURSE ?= results/course
BOOK   ?= results/book
book: $(DEPS)
	$(BIN)/python -m deliverylab.classroom.course.book --from $(COURSE) --out $(BOOK)

# The full anomaly matrix (a benchmark: hours on 2 cores); SEEDS/VALUES shrink it,
# STAGES=python (or spark) runs one processing stage only.
SEEDS  ?= 20
VALUES ?= 10000
STAGES ?= python,spark
matrix: setup
	$(BIN)/python -m deliverylab.matrix --seeds $(SEEDS) --values $(VALUES) --stages $(STAGES)

# Classroom readiness: a pass/fail list with fixes (DOCKER=1 also checks the Docker path).
doctor: $(DEPS)
	$(BIN)/python -m deliverylab.classroom.setup.doctor $(if $(filter-out 0,$(DOCKER)),--docker)

# Sizing a classroom (a benchmark: ~25 min on 2 cores, run it alone): every chapter's
# stack alone, then chapter 02 by 1, 2, 3 students at once, under each student profile;
# prints how many students fit a host and the hub settings, covering the heaviest whole
# chapter that `bench/hub_course.py --save $(PLAN_OUT)` measured through a hub (without
# those rows it covers chapter 02 only and says so). PLAN_MEASURE=0 only prints
# the fit from the figures saved in PLAN_OUT, e.g. for another host:
#   make classroom-plan PLAN_MEASURE=0 CORES=16 MEMORY=64 CLASS_SIZE=30
PLAN_OUT     ?= results/classroom-plan
PLAN_MEASURE ?= 1
CORES        ?=
MEMORY       ?=
CLASS_SIZE   ?=
classroom-plan: setup
	$(BIN)/python -m deliverylab.classroom.sizing.plan --out $(PLAN_OUT) \
	    $(if $(filter-out 0,$(PLAN_MEASURE)),--stacks all --students 1 2 3 --chapter-run) \
	    $(if $(CORES),--cores $(CORES)) $(if $(MEMORY),--memory $(MEMORY)) \
	    $(if $(CLASS_SIZE),--class-size $(CLASS_SIZE))

# Everything set-up downloads, in one folder to copy: wheels, Kafka and connector jars.
# BUNDLE_PLATFORMS="macosx_11_0_arm64 win_amd64" adds wheels for other machines.
bundle: setup
	$(BIN)/python -m deliverylab.classroom.setup.bundle make $(BUNDLE_DIR) \
	    $(foreach p,$(BUNDLE_PLATFORMS),--platform $(p))

# A JupyterHub for a class on this machine (as root): one Unix user per student
# (dlab-<name>, home /home/dlab-<name>), a password each (a class list file
# STUDENTS=file with `name:password` lines, the others generated and printed on
# build/classroom/class-sheet.txt, 0600; CLASSROOM_PASSWORD=...: one shared password
# instead, which lets any student log in as another), the idle culler after
# CULL_TIMEOUT s, MEM_LIMIT_GB/CPU_LIMIT per student (a cgroup each). docs/instructors.md:
# "make classroom". INSTRUCTORS=ida,... (default: one user `instructor`) may open the
# live dashboard at /services/instructor/. Ctrl-C stops the hub, every server and every
# student process.
# SPAWNER=docker: a container of the lab image per student instead (the engine started
# and the image built first: docker/engine.sh, docker/lab-image.sh; limits by Docker).
SPAWNER ?= local
STUDENTS ?= $(error give STUDENTS=alice,bob,... or STUDENTS=classlist.txt)
CULL_TIMEOUT ?= 3600
HUB_PORT ?= 8000
CHP := build/chp/node_modules/.bin/configurable-http-proxy
$(CHP):
	npm install --no-audit --no-fund --prefix build/chp configurable-http-proxy@5.3.0
# Empty: the plan's cap (classroom/sizing/plan.py default_mem_limit_gb: the heaviest chapter's
# peak RSS x 1.25, 3 GB from chapter 07 (classroom/sizing/sizing.json) unless
# results/classroom-plan says more). A
# host where no cap can be set (no writable cgroup v1 or v2) refuses to start the class
# unless ALLOW_UNCAPPED=1.
MEM_LIMIT_GB ?=
CPU_LIMIT ?=
ALLOW_UNCAPPED ?=
export CLASSROOM_PASSWORD
classroom: setup $(CHP)
	$(BIN)/python -m pip install --quiet -e '.[classroom]'
	$(if $(filter docker,$(SPAWNER)),bash docker/engine.sh && PYTHON=$(BIN)/python bash docker/lab-image.sh)
	$(BIN)/python -m deliverylab.classroom.hub start --students $(STUDENTS) \
	    --port $(HUB_PORT) --cull-timeout $(CULL_TIMEOUT) --spawner $(SPAWNER) \
	    $(if $(MEM_LIMIT_GB),--mem-limit-gb $(MEM_LIMIT_GB)) $(if $(CPU_LIMIT),--cpu-limit $(CPU_LIMIT)) \
	    $(if $(filter-out 0,$(ALLOW_UNCAPPED)),--allow-uncapped) \
	    $(if $(INSTRUCTORS),--instructors $(INSTRUCTORS))

clean:
	rm -rf $(VENV) .pytest_cache

clean-cache:
	rm -rf $${DELIVERYLAB_CACHE:-$$HOME/.cache/deliverylab}

FORCE:
