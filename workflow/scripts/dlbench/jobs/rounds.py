"""Two result sets measured on one machine in interleaved rounds, so that a comparison of them measures the sets and
not the hour each ran in.

A machine drifts (the CHANGELOG's 0.46.0 entry measured this one's): the runs of one Snakemake invocation share its
time, so their spread holds none of the drift between invocations, and a comparison of two sets run one after the
other reads that drift as a difference. So round ``r`` runs every set's repetition ``r``
in an invocation of its own, and the sets take turns, the order reversed every other round (A B, B A, A B, ...): the
drift of the session falls on both alike and, each repetition being in its own invocation, into each cell's spread,
where the intervals see it. asv interleaves the rounds of two commits for the same reason (``asv continuous
--interleave-rounds``); Abedi and Brecht ("Conducting Repeatable Experiments in Highly Variable Cloud Computing
Environments", ICPE 2017) measured that interleaved trials are what makes such comparisons repeatable.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROUND_TARGET = "results/tables/runs.csv"  # a round's target: its repetition's records and the runs table


@dataclass(frozen=True)
class ResultSet:
    """One side of a comparison: the workflow directory it is measured in, its config file, and the repetitions
    that config asks for."""
    directory: Path
    configfile: Path
    repetitions: int


@dataclass(frozen=True)
class Machine:
    """What every invocation is given: Snakemake's command with its profile, the cores and the GPUs to use."""
    snakemake: tuple[str, ...]
    cores: int | str
    gpus: int = 0


def schedule(sets: Sequence[ResultSet]) -> list[tuple[ResultSet, int]]:
    """The rounds in their order, each a set and its repetition: round ``r`` runs the repetition ``r`` of every
    set that asks for that many, in the sets' order in odd rounds and in the reverse in even ones."""
    return [(result_set, round_number) for round_number in range(1, max(s.repetitions for s in sets) + 1)
            for result_set in (sets if round_number % 2 else sets[::-1]) if round_number <= result_set.repetitions]


def round_command(machine: Machine, result_set: ResultSet, repetition: int) -> list[str]:
    """One round of a set: its records up to ``repetition`` and its runs table. Each record's spec names its own
    repetition, so the records of the earlier rounds stay current (dlbench.record.currency)."""
    # --config last: it takes every argument after it
    return [*_invocation(machine, result_set), ROUND_TARGET, "--config", f"repetitions={repetition}"]


def final_command(machine: Machine, result_set: ResultSet, targets: Sequence[str]) -> list[str]:
    """After the rounds: the set's ``targets`` (its default target where none) of its own config, whose runs all
    exist by then."""
    return [*_invocation(machine, result_set), *targets]


def _invocation(machine: Machine, result_set: ResultSet) -> list[str]:
    return [*machine.snakemake, "--directory", str(result_set.directory), "--configfile",
            str(result_set.configfile.resolve()), "--resources", f"gpu={machine.gpus}", "--cores", str(machine.cores)]
