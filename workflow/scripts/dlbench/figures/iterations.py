"""Every training step's time."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..tables import first_line, setting_order, settings
from ..tables.runs import runs_table
from . import FRAMEWORK_COLOURS, framework_order, plain_log, save, with_notes


def iteration_times(records: list[dict], outputs: list[Path], hardware: Sequence[str] = ()) -> None:
    """Every step of every training run of a cell, warm-up included (shaded): milliseconds per step against the step's
    number, a line per run in its framework's colour, a panel per setting (targets in the order ``hardware`` names
    them). Jitter, the first step's compilation and the warm-up's settling are there to see; the means in the other
    figures hide them."""
    records = [record for record in records if record["run"]["task"] == "train"]
    table = runs_table(records)
    panels = setting_order(table, hardware)
    labels = dict(zip(table["record"], settings(table)))
    run = records[0]["run"]
    missing = [f"{r['run']['framework']} {labels[r['path']]} rep {r['run']['repetition']}: {r['status']}: "
               f"{first_line(r['reason'])}" for r in records if not r["timing"]["iteration_seconds"]]
    fig, axes = with_notes(max(6.5, 4.5 * len(panels)), 4, sorted(missing), len(panels))
    for ax, panel in zip(axes, panels):
        warmups, shortest, longest = set(), float("inf"), 0.0
        for record in (r for r in records if labels[r["path"]] == panel and r["timing"]["iteration_seconds"]):
            framework, times = record["run"]["framework"], record["timing"]["iteration_seconds"]
            ax.plot(range(1, len(times) + 1), [t * 1e3 for t in times], color=FRAMEWORK_COLOURS[framework],
                    linewidth=0.8, alpha=0.8, label=framework, gid=f"steps {framework} {panel} rep "
                                                                  f"{record['run']['repetition']}")
            warmups.add(record["run"]["warmup_iterations"])
            shortest, longest = min(shortest, min(times)), max(longest, max(times))
        for warmup in warmups:
            ax.axvspan(0.5, warmup + 0.5, color="gray", alpha=0.15, linewidth=0)
        handles = dict(zip(*reversed(ax.get_legend_handles_labels())))
        shown = framework_order(handles)
        ax.legend([handles[f] for f in shown], shown, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1),
                  borderaxespad=0)
        ax.set(yscale="log", title=f"{panel} (shaded: warm-up, not timed)", xlabel="step", ylabel="ms per step")
        if longest:
            plain_log(ax.yaxis, longest / shortest)
        ax.title.set_fontsize(9)
    fig.suptitle(f"{run['dataset']} / {run['network']}: time of every training step", fontsize=10)
    save(fig, outputs)
