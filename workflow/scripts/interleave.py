"""Command line (make interleaved): two result sets measured on this machine in interleaved rounds, for a comparison
of them (make compare) that measures the sets and not the machine's drift between them (dlbench.jobs.rounds).

    python workflow/scripts/interleave.py A B --configfile CONFIG [--configfile-b CONFIG_B] [--cores N|all] [--gpus N]
                                        [TARGET ...]

A and B are workflow directories (made where missing); B runs CONFIG_B where given, else CONFIG too (an A/A
comparison). Round r runs repetition r of each set, A first in odd rounds and B first in even ones; then each set's
TARGETs (its default target where none). Each invocation's Snakemake output goes to DIR/logs/rounds/; a line per
invocation says which and how long. A failed invocation stops the rounds: run the command again and it goes on
where it stopped, the records made kept.
"""
import argparse
import subprocess
import sys
import time
from pathlib import Path

import yaml
from dlbench.jobs.rounds import Machine, ResultSet, final_command, round_command, schedule

ROOT = Path(__file__).resolve().parents[2]
# make run's profile: a failed job never stops the others
SNAKEMAKE = (sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--profile",
             str(ROOT / "profiles" / "local"))

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("a", type=Path, help="set A's workflow directory")
parser.add_argument("b", type=Path, help="set B's workflow directory")
parser.add_argument("--configfile", type=Path, required=True, help="set A's config (and B's without --configfile-b)")
parser.add_argument("--configfile-b", type=Path, help="set B's config")
parser.add_argument("--cores", default="all", help="Snakemake's --cores (default: all)")
parser.add_argument("--gpus", type=int, default=0, help="the node's GPUs, Snakemake's gpu resource (default: 0)")
parser.add_argument("targets", nargs="*", help="each set's targets after the rounds (default: its default target)")
args = parser.parse_intermixed_args()


def repetitions(configfile: Path) -> int:
    """The repetitions a config asks for: its own key, else the default config's (Snakemake lays a --configfile
    over config/config.yaml)."""
    for source in (configfile, ROOT / "config" / "config.yaml"):
        try:
            given = (yaml.safe_load(source.read_text()) or {}).get("repetitions")
        except (OSError, yaml.YAMLError) as error:
            parser.error(f"{source}: {error}")
        if isinstance(given, dict):
            parser.error(f"{source}: repetitions: a target ({given}) decides its runs within one invocation; "
                         "interleaved rounds need a whole number")
        if given is not None:
            if isinstance(given, bool) or not isinstance(given, int) or given < 1:
                parser.error(f"{source}: repetitions: {given!r} is not a whole number of at least 1")
            return given
    parser.error(f"neither {configfile} nor config/config.yaml sets repetitions")


def invoke(step: str, result_set: ResultSet, command: list[str], log_name: str) -> None:
    logs = result_set.directory / "logs" / "rounds"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{log_name}.log"
    print(f"{step} {result_set.directory}: ...", end="", flush=True)
    started = time.monotonic()
    with open(log, "w") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False)
    print(f" {time.monotonic() - started:.0f} s", flush=True)
    if done.returncode:
        sys.exit(f"{step} {result_set.directory} failed (exit {done.returncode}); its log: {log}\n"
                 f"run this command again to go on from there: the records made are kept")


sets = [ResultSet(args.a, args.configfile, repetitions(args.configfile)),
        ResultSet(args.b, args.configfile_b or args.configfile, repetitions(args.configfile_b or args.configfile))]
machine = Machine(SNAKEMAKE, args.cores, args.gpus)
rounds = schedule(sets)
for number, (result_set, repetition) in enumerate(rounds, 1):
    invoke(f"[{number}/{len(rounds)}] round {repetition}", result_set,
           round_command(machine, result_set, repetition), f"round{repetition}")
for result_set in sets:
    invoke("tables", result_set, final_command(machine, result_set, args.targets), "tables")
print(f"compare them: make compare A={args.a / 'results'} B={args.b / 'results'}")
