"""Two result sets in interleaved rounds: the order of the rounds, and what one round asks Snakemake for."""
import re
import subprocess
import sys
from pathlib import Path

import pytest
from dlbench.jobs.rounds import Machine, ResultSet, final_command, round_command, schedule

from ...conftest import ROOT

AA_CONFIG = ROOT / ".test" / "config-aa" / "config.yaml"
MACHINE = Machine((sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile")), cores=2)


def test_the_sets_take_turns_and_each_round_reverses_the_order():
    a, b = ResultSet(Path("a"), AA_CONFIG, 4), ResultSet(Path("b"), AA_CONFIG, 4)
    assert schedule([a, b]) == [(a, 1), (b, 1), (b, 2), (a, 2), (a, 3), (b, 3), (b, 4), (a, 4)]


def test_a_set_of_fewer_repetitions_sits_out_the_rounds_beyond_them():
    a, b = ResultSet(Path("a"), AA_CONFIG, 3), ResultSet(Path("b"), AA_CONFIG, 1)
    assert schedule([a, b]) == [(a, 1), (b, 1), (a, 2), (a, 3)]


def planned_repetitions(command: list[str], workdir: Path) -> set[int]:
    """The repetitions of the run records a Snakemake command would make, from its dry run."""
    at = command.index("--config")  # --config takes the arguments after it: the dry run's go before
    done = subprocess.run([*command[:at], "--dry-run", *command[at:]], capture_output=True, text=True, check=True,
                          timeout=300, cwd=workdir)
    return {int(found) for found in re.findall(r"output: results/runs/\S+/rep(\d+)\.json", done.stdout)}


def test_a_round_plans_the_records_up_to_its_repetition_and_no_further(tmp_path):
    """Snakemake, asked for round 2 of the A/A config, would make repetitions 1 and 2 of every cell (round 1 not
    run yet), none of the config's third; the tables after the rounds are the config's own targets."""
    result_set = ResultSet(tmp_path / "a", AA_CONFIG, 3)
    assert planned_repetitions(round_command(MACHINE, result_set, 2), tmp_path) == {1, 2}
    assert final_command(MACHINE, result_set, ["results/tables/appendix.csv"])[-1] == "results/tables/appendix.csv"


@pytest.mark.parametrize(("repetitions", "said"), [("0", "0"), ("three", "'three'"), ("true", "True")])
def test_a_config_whose_repetitions_are_not_a_count_is_refused_naming_the_file(tmp_path, repetitions, said):
    config = tmp_path / "config.yaml"
    config.write_text(AA_CONFIG.read_text().replace("repetitions: 3", f"repetitions: {repetitions}"))
    done = subprocess.run([sys.executable, str(ROOT / "workflow" / "scripts" / "interleave.py"), str(tmp_path / "a"),
                           str(tmp_path / "b"), "--configfile", str(config)], capture_output=True, text=True,
                          check=False, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{config}: repetitions: {said} is not a whole number of at least 1" in done.stderr
    assert not (tmp_path / "a").exists()
