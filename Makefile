# Two entry points for a fresh machine (Python >= 3.11 with venv):
#   make run    set up .venv, run the workflow on config/config.yaml, write results/report.html
#   make test   set up .venv with the test extras, run the test suite but its slow end-to-end tests
#               (minutes; make test-slow runs those, make test-all both; CI runs both)
VENV := .venv
BIN := $(VENV)/bin
CORES ?= all
# The node's GPUs, for Snakemake's count of the gpu resource (which GPU a job gets: dlbench.hardware.slots).
GPUS ?= $(shell nvidia-smi --list-gpus 2>/dev/null | wc -l)
SNAKEMAKE_ARGS ?=
# Framework environments (several GB) are built once per machine and shared by every checkout, the tests' scratch
# workflows and the user's (dlbench.envs.shared_build, keyed by what each is built from); empty: each workflow builds
# its own under .venvs/. A Slurm cluster's nodes must see it (a home directory does).
export DLBENCH_VENV_ROOT ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/dlbench/venvs

$(BIN)/python:
	python3 -m venv $(VENV)

$(VENV)/.workflow-installed: envs/workflow.requirements.txt | $(BIN)/python
	$(BIN)/pip install --disable-pip-version-check -r envs/workflow.requirements.txt
	touch $@

$(VENV)/.test-installed: envs/test.requirements.txt envs/workflow.requirements.txt envs/pytorch.requirements.txt | $(BIN)/python
	$(BIN)/pip install --disable-pip-version-check -r envs/test.requirements.txt
	touch $@

# Debian packages, installed when missing (as root), elsewhere a message: what Caffe's build
# compiles and links against (without them the Caffe runs come out "unavailable" with the missing
# headers named), the OpenMPI that CNTK's wheels load (and its mpiexec, for CNTK on several
# devices), and for the tests also Slurm, which the Slurm integration test starts, and Chromium with its
# WebDriver, in which a test opens the HTML report.
RUN_APT := $(shell cat envs/caffe.apt.txt envs/cntk.apt.txt)
TEST_APT := $(RUN_APT) $(shell cat envs/slurm.apt.txt envs/browser.apt.txt)
define apt_install
	@if ! command -v dpkg-query >/dev/null; then \
		echo "not Debian: install the equivalents of $(1)"; \
	elif [ "$$(dpkg-query -W -f='$${db:Status-Abbrev}\n' $(1) 2>/dev/null | grep -c '^ii')" = "$(words $(1))" ]; then \
		:; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(1); \
	else \
		echo "missing Debian packages: sudo apt-get install $(1)"; \
	fi
endef

.PHONY: system-packages test-system-packages
system-packages:
	$(call apt_install,$(RUN_APT))
test-system-packages:
	$(call apt_install,$(TEST_APT))

.PHONY: run test test-slow test-all lint bench retry-failed compare interleaved report requirements-check gpu-check gpu-envs-check
run: system-packages $(VENV)/.workflow-installed
	$(BIN)/snakemake --profile profiles/local --cores $(CORES) --resources gpu=$(GPUS) $(SNAKEMAKE_ARGS)
	$(BIN)/snakemake --cores $(CORES) --report results/report.html $(SNAKEMAKE_ARGS)

# Two pytest-xdist workers: most tests wait on a framework's start in a process of its own, and two of them overlap
# on two cores; each test file goes whole to one worker, the Slurm tests' to one (tests/conftest.py).
# TEST_WORKERS=0: one process.
TEST_WORKERS ?= 2
PYTEST := $(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile
test: test-system-packages $(VENV)/.test-installed
	$(PYTEST) -m "not slow"
test-slow: test-system-packages $(VENV)/.test-installed
	$(PYTEST) -m slow
test-all: test-system-packages $(VENV)/.test-installed
	$(PYTEST)
# ruff (pyproject.toml: its default rules and the 120-column limit) over the package, the tests and the benchmarks
lint: $(VENV)/.test-installed
	$(BIN)/ruff check workflow/scripts tests benchmarks

# Two result sets side by side, cell by cell: make compare A=<results dir> B=<results dir>
# (writes results/comparison/: comparison.csv, comparison.md, comparison_train_speed.{png,svg}).
compare: $(VENV)/.workflow-installed
	$(BIN)/python workflow/scripts/compare_results.py $(A) $(B)

# Two result sets measured on this machine in interleaved rounds (dlbench.jobs.rounds), for make compare to judge
# the sets and not the machine's drift between them: an A/A check, or two configs on one machine.
#   make interleaved A=<dir> B=<dir> CONFIG=<config> [CONFIG_B=<config>]     (then make compare A=<dir>/results ...)
interleaved: $(VENV)/.workflow-installed
	$(BIN)/python workflow/scripts/interleave.py $(A) $(B) --configfile $(CONFIG) \
		$(if $(CONFIG_B),--configfile-b $(CONFIG_B)) --cores $(CORES) --gpus $(GPUS)

# One report over the results of workflow runs on machines that could not share one (a laptop's, a GPU node's):
#   make report RESULTS="<results dir> <results dir> ..." [MERGED=results-merged]
# reads their records where they lie (config merge, dlbench.tables.merge) and writes MERGED/results/ (runs table,
# appendix, figures) and MERGED/report.html; nothing is trained.
MERGED ?= results-merged
empty :=
comma := ,
MERGE_CONFIG = merge=[$(subst $(empty) $(empty),$(comma),$(strip $(foreach dir,$(RESULTS),$(abspath $(dir)))))]
MERGE_ARGS = --snakefile $(CURDIR)/Snakefile --directory $(MERGED) --configfile $(CURDIR)/config/config.yaml \
	--config '$(MERGE_CONFIG)' --cores $(CORES)
report: $(VENV)/.workflow-installed
	@test -n "$(RESULTS)" || { echo 'make report RESULTS="<results dir> <results dir> ...": which results?'; exit 2; }
	mkdir -p $(MERGED)
	$(BIN)/snakemake $(MERGE_ARGS) $(SNAKEMAKE_ARGS)
	$(BIN)/snakemake $(MERGE_ARGS) --report $(abspath $(MERGED))/report.html $(SNAKEMAKE_ARGS)

# Every environment's requirements file, CPU and CUDA, resolves from the registry (pip, without
# installing): a CUDA file is installed only on a GPU node, where nothing else would see it fail.
requirements-check: $(VENV)/.workflow-installed
	$(BIN)/python workflow/scripts/check_requirements.py

# Every CUDA environment installed here (GPU or not; several GB each, one at a time, removed after) and checked by
# the dynamic loader to bring each shared library its framework loads but the driver's, with the GPU code each
# carries (workflow/scripts/gpu_envs_check.py): results/gpu-envs/gpu-envs.md. ENVIRONMENTS=mxnet checks one.
ENVIRONMENTS ?=
gpu-envs-check: $(VENV)/.workflow-installed
	$(BIN)/python workflow/scripts/gpu_envs_check.py $(ENVIRONMENTS)

# The GPU acceptance check in one call (workflow/scripts/gpu_check.py, .test/config-gpu-check): run by an
# interpreter with CUDA builds of torch (and jax) and Snakemake, e.g. GPU_CHECK_PYTHON=python3 on a bare GPU
# node; prints a verdict per check, exit 1 on a FAIL. Without a GPU every verdict is "unavailable: no GPU".
GPU_CHECK_PYTHON ?= $(BIN)/python
gpu-check: $(VENV)/.workflow-installed
	$(GPU_CHECK_PYTHON) workflow/scripts/gpu_check.py --cores $(shell nproc)

# The project's performance goals measured (workflow/scripts/bench.py, benchmarks/): results/benchmarks.md and .csv,
# each figure with its spread and whether its rounds agreed. DEVICE=cuda on a GPU node, with an interpreter
# whose torch is a CUDA build (BENCH_PYTHON=python3 on a bare GPU node); about 25 minutes on a 2-core CPU.
DEVICE ?= cpu
BENCH_PYTHON ?= $(BIN)/python
bench: $(VENV)/.test-installed
	$(BENCH_PYTHON) workflow/scripts/bench.py --plan $(DEVICE) --output results/benchmarks

# The last workflow run's failed records moved aside (kept under results/runs-failed/) and its own command run again
# (its config, profile and executor: results/.last-run.json), which redoes only those; then its report.
retry-failed: system-packages $(VENV)/.workflow-installed
	$(BIN)/python workflow/scripts/retry_failed.py -- $(SNAKEMAKE_ARGS)
