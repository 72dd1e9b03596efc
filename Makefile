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

# The Debian packages Caffe's build compiles and links against, installed when missing (as root);
# elsewhere a message, and the Caffe runs come out "unavailable" with the missing headers named.
CAFFE_APT := $(shell cat envs/caffe.apt.txt)
.PHONY: system-packages
system-packages:
	@if ! command -v dpkg-query >/dev/null; then \
		echo "not Debian: install the equivalents of envs/caffe.apt.txt to build Caffe"; \
	elif [ "$$(dpkg-query -W -f='$${db:Status-Abbrev}\n' $(CAFFE_APT) 2>/dev/null | grep -c '^ii')" = "$(words $(CAFFE_APT))" ]; then \
		:; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(CAFFE_APT); \
	else \
		echo "to build Caffe: sudo apt-get install $(CAFFE_APT)"; \
	fi

.PHONY: run test retry-failed
run: system-packages $(VENV)/.workflow-installed
	$(BIN)/snakemake --cores $(CORES) --keep-going $(SNAKEMAKE_ARGS)
	$(BIN)/snakemake --cores $(CORES) --report results/report.html $(SNAKEMAKE_ARGS)

test: system-packages $(VENV)/.test-installed
	$(BIN)/pytest

# Move failed run records aside (kept under results/runs-failed/) and run only those again.
retry-failed: system-packages $(VENV)/.workflow-installed
	$(BIN)/python workflow/scripts/retry_failed.py
	$(BIN)/snakemake --cores $(CORES) --keep-going $(SNAKEMAKE_ARGS)
	$(BIN)/snakemake --cores $(CORES) --report results/report.html $(SNAKEMAKE_ARGS)
