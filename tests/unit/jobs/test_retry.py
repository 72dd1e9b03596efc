"""make retry-failed's command: the last workflow run's own, started where it was, forcing nothing more."""
import sys
from pathlib import Path

import pytest
from dlbench.jobs import retry


def test_the_directory_a_run_was_started_in_is_found_from_its_working_directory(tmp_path):
    workdir = tmp_path / "a" / "b"
    workdir.mkdir(parents=True)
    assert retry.launch_directory(["snakemake", "--cores", "2"], workdir) == workdir
    assert retry.launch_directory(["snakemake", "--directory", "a/b"], workdir) == tmp_path
    assert retry.launch_directory(["snakemake", "-d", "./b/"], workdir) == tmp_path / "a"
    assert retry.launch_directory(["snakemake", "--directory=a/b"], workdir) == tmp_path
    assert retry.launch_directory(["snakemake", "--directory", str(workdir)], workdir) is None


def test_the_replayed_command_is_the_run_s_own_less_what_would_force_more(tmp_path):
    last_run = {"argv": ["--profile", "profiles/slurm", "--configfile", "config/thesis.yaml", "--forcerun", "train",
                         "figure", "--cores", "20", "-F", "--force", "results/tables/appendix.md"],
                "executable": sys.executable, "started_in": str(tmp_path), "workdir": str(tmp_path)}
    started_in, command = retry.replay(last_run, ["--jobs", "4"])
    assert started_in == tmp_path
    assert command == [sys.executable, "-m", "snakemake", "--profile", "profiles/slurm", "--configfile",
                       "config/thesis.yaml", "--cores", "20", "results/tables/appendix.md", "--jobs", "4"]


def test_a_run_started_from_a_directory_it_does_not_name_is_replayed_only_where_its_paths_are_absolute(tmp_path):
    last_run = {"argv": ["--directory", str(tmp_path), "--configfile", "config/thesis.yaml"],
                "executable": sys.executable, "started_in": None, "workdir": str(tmp_path)}
    with pytest.raises(ValueError, match="config/thesis.yaml"):
        retry.replay(last_run)
    last_run["argv"][-1] = str(tmp_path / "thesis.yaml")
    assert retry.replay(last_run)[0] == Path(tmp_path)


def test_only_the_run_s_own_failed_records_are_set_aside(tmp_path):
    runs = tmp_path / "runs"
    for name, status in (("a", "failed"), ("b", "failed"), ("c", "ok")):
        (runs / name).mkdir(parents=True)
        (runs / name / "rep1.json").write_text(f'{{"status": "{status}", "provenance": {{}}}}')
    ours = {(runs / name / "rep1.json").resolve() for name in ("a", "c")}
    moved = retry.set_aside(runs, tmp_path / "runs-failed", only=ours)
    assert moved == [tmp_path / "runs-failed" / "a" / "rep1.unknown.json"]
    assert (runs / "b" / "rep1.json").exists() and (runs / "c" / "rep1.json").exists()
