"""Test accuracy over time."""
from __future__ import annotations

from pathlib import Path

from ..tables import first_line, settings
from ..tables.runs import runs_table
from . import FRAMEWORK_COLOURS, save, with_notes


def accuracy_curves(records: list[dict], outputs: list[Path]) -> None:
    """Test accuracy against the seconds since the first training step (training and evaluations), one
    colour per framework and setting, one line per run with a mark per epoch: the curve a user reads to
    pick a framework. The target accuracy is dashed; runs without epochs are listed with their status."""
    records = [record for record in records if record["run"]["task"] == "accuracy"]
    run = records[0]["run"]
    table = runs_table(records)
    labels = dict(zip(table["record"], table["framework"] + " " + settings(table)))
    frameworks = dict(zip(table["record"], table["framework"]))
    styles = dict(zip(sorted(set(settings(table))), ["-", "--", ":", "-."] * 4))  # a setting's line style
    # runs without epochs, once per reason: "cntk cpu accuracy (rep 1, 2, 3): unavailable: ..."
    missing = {}
    for record in records:
        if not record["quality"].get("epochs"):
            why = f"{labels[record['path']]} (rep {{}}): {record['status']}: {first_line(record['reason'])}"
            missing.setdefault(why, []).append(str(record["run"]["repetition"]))
    fig, (ax,) = with_notes(7, 4.5, sorted(why.format(", ".join(reps)) for why, reps in missing.items()))
    shown = set()
    for record in records:
        label, epochs = labels[record["path"]], record["quality"].get("epochs") or []
        if not epochs:
            continue
        ax.plot([0] + [epoch["elapsed_seconds"] for epoch in epochs],
                [None] + [epoch["test_accuracy"] for epoch in epochs],
                marker="o", markersize=3, color=FRAMEWORK_COLOURS[frameworks[record["path"]]],
                linestyle=styles[label.split(" ", 1)[1]], label=None if label in shown else label,
                gid=f"curve {label} rep {record['run']['repetition']}")
        shown.add(label)
    targets = {record["run"].get("target_accuracy") for record in records} - {None}
    for target in targets:
        ax.axhline(target, linestyle="--", color="gray", linewidth=1, label=f"target {target:g}")
    ax.set(title=f"{run['dataset']} / {run['network']}: test accuracy over time", ylim=(0, 1.02),
           xlabel="seconds since the first training step (training and evaluations)", ylabel="test top-1 accuracy")
    if shown or targets:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    save(fig, outputs)
