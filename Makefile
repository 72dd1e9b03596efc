# Two entry points for a fresh machine (Python >= 3.11 with venv):
#   make run    set up .venv, run the workflow on config/config.yaml, write results/report.html
#   make test   set up .venv with the test extras, run the test suite
VENV := .venv
BIN := $(VENV)/bin
CORES ?= all
SNAKEMAKE_ARGS ?=

$(BIN)/python:
	python3 -m venv $(VENV)

$(VENV)/.workflow-installed: envs/workflow.requirements.txt | $(BIN)/python
	$(BIN)/pip install --disable-pip-version-check -r envs/workflow.requirements.txt
	touch $@

$(VENV)/.test-installed: envs/test.requirements.txt envs/workflow.requirements.txt envs/pytorch.requirements.txt | $(BIN)/python
	$(BIN)/pip install --disable-pip-version-check -r envs/test.requirements.txt
	touch $@

.PHONY: run test retry-failed
run: $(VENV)/.workflow-installed
	$(BIN)/snakemake --cores $(CORES) --keep-going $(SNAKEMAKE_ARGS)
	$(BIN)/snakemake --cores $(CORES) --report results/report.html $(SNAKEMAKE_ARGS)

test: $(VENV)/.test-installed
	$(BIN)/pytest

# Move failed run records aside (kept under results/runs-failed/) and run only those again.
retry-failed: $(VENV)/.workflow-installed
	$(BIN)/python workflow/scripts/retry_failed.py
	$(BIN)/snakemake --cores $(CORES) --keep-going $(SNAKEMAKE_ARGS)
	$(BIN)/snakemake --cores $(CORES) --report results/report.html $(SNAKEMAKE_ARGS)
