"""The reference tables the documentation holds, generated from the code (tests/test_docs.py holds each page to
its table): the pip CUDA builds (docs/environments.md), every metric and flag (docs/measurement.md) and the backends'
contracts (ADDING.md). The framework table is the registry's own (:func:`dlbench.registry.registry_table`)."""
from __future__ import annotations

import inspect
from pathlib import Path
from typing import Protocol

from .. import backends, envs, metrics
from ..paths import PROJECT_ROOT


def cuda_builds_table(envs_dir: Path = PROJECT_ROOT / "envs") -> str:
    """Every pip CUDA build and what its requirements file's first line says it needs and serves, as
    docs/environments.md's Markdown table; the order a node's builds are tried in is
    :func:`dlbench.envs.cuda_builds`'."""
    rows = ["| environment | requirements file | CUDA | driver | GPUs served |", "|---|---|---|---|---|"]
    for file in sorted(Path(envs_dir).glob("*.cuda*.requirements.txt")):
        facts = envs.BuildFacts.of(file)
        served = f"sm_{facts.low} " + (f"to sm_{facts.high}" if facts.high else "and later")
        rows.append(f"| `{envs.environment_of(file)}` | `envs/{file.name}` | {facts.cuda} | {facts.driver} or newer | "
                    f"{served} |")
    return "\n".join(rows)


def glossary() -> str:
    """Every metric and flag as docs/measurement.md's Markdown tables (tests/test_docs.py holds the page to it)."""
    needs = {"gpu": "GPU runs", "rapl": "nodes with RAPL", "peak": "where the peak is known",
             "idle_gpu": "CPU runs beside idle GPUs", "": ""}
    rows = ["| metric | unit | tasks | measured on | what it is |", "|---|---|---|---|---|"]
    rows += [f"| `{name}` | {metric.unit or '—'} | {', '.join(metric.tasks)} | {needs[metric.needs] or 'every run'} | "
             f"{metric.meaning.replace('|', '/')} (`{metric.section}.{metric.field}`) |"
             for name, metric in metrics.METRICS.items()]
    rows += ["", "| flag | a run carries it where | bears on |", "|---|---|---|"]
    rows += [f"| {flag.words} | `{flag.column}` is above {flag.above:g} | "
             f"{', '.join(f'`{name}`' for name in flag.metrics) or 'every flagged metric'} |"
             for flag in metrics.FLAGS.values()]
    return "\n".join(rows)


def contract_reference() -> str:
    """The contracts a backend module implements, each member with its signature (``self`` left out) and the first
    sentence of what it does: ADDING.md's reference (tests/test_docs.py holds the page to it)."""
    def first_sentence(thing) -> str:
        said = " ".join(inspect.cleandoc(thing.__doc__ or "").split("\n\n")[0].split())  # its own, not inherited
        return said.split(". ")[0].rstrip(".") + "." if said else ""

    def signature(member) -> str:
        found = inspect.signature(member)
        return str(found.replace(parameters=[p for p in found.parameters.values() if p.name != "self"])).replace(
            "'", "")

    lines = []
    for contract in (backends.Backend, backends.Harness, backends.TrainingHarness, backends.InferenceHarness,
                     backends.LayerProfiler, backends.WorkerBackend, backends.WorkerHarness):
        bases = [base.__name__ for base in contract.__bases__ if base is not Protocol]
        named = f"`{contract.__name__}`" + (f" (and all of `{bases[0]}`)" if bases else "")
        lines += [f"{named}: {first_sentence(contract)}", ""]
        lines += [f"- `{name}: {kind}`" for name, kind in contract.__annotations__.items()]
        lines += [f"- `{name}{signature(member)}`" + (f": {first_sentence(member)}" if member.__doc__ else "")
                  for name, member in vars(contract).items()
                  if callable(member) and member.__qualname__.startswith(contract.__name__)
                  and (not name.startswith("_") or name in ("__init__", "__enter__", "__exit__"))]
        lines.append("")
    return "\n".join(lines).rstrip()
