"""Each stage's time, read from a real Snakemake log: a small workflow whose rules stand for the stages."""
import subprocess
import sys

from dlbench.jobs import stages

from ...conftest import ROOT

# Rules named and filed as the workflow's: environments (framework_venv), data (a rule of datasets.smk), runs (train,
# one failing), figures (aggregate.smk); each second-long job on one core, one after another.
DATASETS_SMK = """
rule convert:
    output: "data/{name}.txt"
    shell: "sleep 1 && touch {output}"
"""
TRAIN_SMK = """
rule framework_venv:
    output: "env.txt"
    shell: "sleep 1 && touch {output}"

rule train:
    input: "env.txt", "data/{i}.txt"
    output: "runs/{i}.txt"
    shell: "sleep 1 && if [ {wildcards.i} = broken ]; then exit 1; fi; touch {output}"
"""
AGGREGATE_SMK = """
rule figure:
    input: expand("runs/{i}.txt", i=range(2))
    output: "figure.txt"
    shell: "sleep 1 && touch {output}"
"""
SNAKEFILE = f"""
import sys
from pathlib import Path
sys.path.insert(0, {str(ROOT / "workflow" / "scripts")!r})
from dlbench.jobs import stages

include: "rules/datasets.smk"
include: "rules/train.smk"
include: "rules/aggregate.smk"

onsuccess:
    print("summary:", stages.write_stages(log, {{rule.name: rule.snakefile for rule in workflow.rules}},
                                          Path("results/stages.md")))

onerror:
    print("summary:", stages.write_stages(log, {{rule.name: rule.snakefile for rule in workflow.rules}},
                                          Path("results/stages.md")))

rule all:
    input: "figure.txt", "runs/broken.txt"

"""


def _snakemake(workdir):
    return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--keep-going"], cwd=workdir,
                          capture_output=True, text=True, timeout=120, check=False)


def test_a_workflow_run_writes_each_stage_s_jobs_and_time_and_a_run_with_nothing_to_do_keeps_the_table(tmp_path):
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "datasets.smk").write_text(DATASETS_SMK)
    (tmp_path / "rules" / "train.smk").write_text(TRAIN_SMK)
    (tmp_path / "rules" / "aggregate.smk").write_text(AGGREGATE_SMK)
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    done = _snakemake(tmp_path)
    assert done.returncode != 0  # the broken run failed; the others went on
    table = (tmp_path / "results" / "stages.md").read_text()
    rows = {cells[0]: cells[1:] for line in table.splitlines() if line.startswith("| ") and "---" not in line
            for cells in [[cell.strip() for cell in line.strip("|").split("|")]]}
    assert list(rows) == ["stage", "environments", "data", "runs", "tables and figures"]  # the target rule: none
    jobs = {stage: int(cells[0]) for stage, cells in rows.items() if stage != "stage"}
    assert jobs == {"environments": 1, "data": 3, "runs": 3, "tables and figures": 1}  # the failed run counted
    window = {stage: float(cells[2]) for stage, cells in rows.items() if stage != "stage"}
    assert window["runs"] >= 2  # three jobs of a second, one after another, stamped to the second
    assert "summary: 8 jobs" in done.stdout + done.stderr
    (tmp_path / "Snakefile").write_text(SNAKEFILE.replace(', "runs/broken.txt"', ""))
    again = _snakemake(tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert (tmp_path / "results" / "stages.md").read_text() == table


def test_a_log_s_jobs_pair_each_start_with_its_own_end():
    log = """[Sat Nov 28 11:04:03 2026]
localrule train:
    output: a
    jobid: 10

[Sat Nov 28 11:04:04 2026]
rule convert:
    jobid: 3

[Sat Nov 28 11:04:09 2026]
Finished jobid: 10 (Rule: train)

[Sat Nov 28 11:04:12 2026]
Error in rule convert:
    message: None
    jobid: 3
"""
    ended = stages.jobs(log)
    assert [(job.rule, (job.end - job.start).total_seconds()) for job in ended] == [("train", 6), ("convert", 8)]


def test_a_run_without_a_log_file_leaves_the_table_alone(tmp_path):
    table = tmp_path / "stages.md"
    assert "no log file" in stages.write_stages([], {}, table)
    assert "no log file" in stages.write_stages(str(tmp_path / "gone.log"), {}, table)
    assert not table.exists()
