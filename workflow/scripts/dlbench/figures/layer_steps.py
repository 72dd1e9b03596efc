"""Seed 004's figures of a profile run's every step: each block's time per iteration, and the share of each
step that neither a layer nor the optimizer's update accounts for, with the missing time summed at 25, 50, 75 and
100 % of the profiled steps."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import seaborn as sns
from matplotlib.ticker import MaxNLocator

from .. import files, networks
from ..datasets import description
from ..record.io import series_path
from ..spec import RunSpec
from ..tables import settings
from ..tables.runs import runs_table
from . import save, with_notes

QUARTERS = (25, 50, 75, 100)


UPDATE_BLOCK = "update"  # the optimizer's update where the profiler times it whole, no layer's


def block_seconds(kept_profile: dict, groups: dict[str, str], device: dict | None = None) -> dict[str, np.ndarray]:
    """Per block of :func:`dlbench.networks.layer_groups`, in the network's order: its forward, backward and update
    seconds in each profiled step, summed over its layers (of ``device``'s steps where given, else the first
    device's, with the optimizer's update: each layer's where the profiler attributes it, as seed 004 did, else
    the whole update as a block of its own, ``update``)."""
    steps = device or kept_profile
    total = np.asarray(steps["forward_seconds"]) + np.asarray(steps["backward_seconds"])  # steps x layers
    layer_updates, update = (None, None) if device else (kept_profile.get("layer_update_seconds"),
                                                          kept_profile.get("update_seconds"))
    if layer_updates:
        total = total + np.asarray(layer_updates)
    blocks = list(dict.fromkeys(groups[name] for name in kept_profile["layers"]))
    seconds = {block: total[:, [groups[name] == block for name in kept_profile["layers"]]].sum(axis=1)
               for block in blocks}
    if update and not layer_updates:
        seconds[UPDATE_BLOCK] = np.asarray(update)
    return seconds


def unaccounted(kept_profile: dict) -> tuple[np.ndarray, dict[int, tuple[int, float]]]:
    """Each profiled step's share that neither a layer nor the optimizer's update accounts for (the seed's
    per-iteration error), and per quarter of the steps (25, 50, 75, 100 %) its last step and those seconds summed
    up to it (the seed's missing time)."""
    steps = np.asarray(kept_profile["iteration_seconds"])
    accounted = (np.asarray(kept_profile["forward_seconds"]) + np.asarray(kept_profile["backward_seconds"])).sum(1)
    if kept_profile.get("update_seconds"):
        accounted = accounted + np.asarray(kept_profile["update_seconds"])
    missing = steps - accounted
    last = {quarter: max(1, round(len(missing) * quarter / 100)) for quarter in QUARTERS}
    return missing / steps, {quarter: (step, float(missing[:step].sum())) for quarter, step in last.items()}


def first_series(records: list[dict]) -> tuple[dict | None, dict | None, str]:
    """The first ok record's kept series (its repetition stands for the cell, as the seed drew one run), or why
    there is none."""
    ok = [record for record in records if record["status"] == "ok"]
    if not ok:
        return None, None, f"{records[0]['status']}: {records[0]['reason'].splitlines()[0]}"
    record = min(ok, key=lambda item: item["run"]["repetition"])
    path = series_path(Path(record["path"]))
    if not path.exists():
        return record, None, f"unavailable: no series beside {Path(record['path']).name} (made before 0.31.0)"
    try:
        return record, files.read_json(path), ""
    except files.Unreadable as error:
        return record, None, f"unavailable: {error}"


def profiled_cells(records: list[dict]) -> tuple[list[tuple[str, dict, dict, dict]], list[str], dict]:
    """The profile records' cells (framework and setting), each with its first ok record, that record's kept
    profile and the blocks of its network (:func:`dlbench.networks.layer_groups`); the cells without, with why;
    and the first record's run (the figure's title)."""
    records = [record for record in records if record["run"]["task"] == "profile"]
    table = runs_table(records)
    table["setting"] = table["framework"] + " " + settings(table)
    notes, rows = [], []
    for cell in sorted(table["setting"].unique()):
        paths = set(table.loc[table["setting"] == cell, "record"])
        record, kept, why = first_series([record for record in records if record["path"] in paths])
        if kept is None or not (kept.get("profile") or {}).get("layers"):
            notes.append(f"{cell}: {why or 'no profiled step'}")
            continue
        spec = RunSpec.from_record(record["run"])
        groups = networks.layer_groups(description(spec.network, spec.family, spec.input_size, spec.classes))
        rows.append((cell, record, kept["profile"], groups))
    return rows, notes, records[0]["run"]


def _block_colours(blocks) -> dict:
    return dict(zip(blocks, sns.color_palette("tab20" if len(blocks) > 10 else "tab10", n_colors=len(blocks))))


def layer_steps(records: list[dict], outputs: list[Path]) -> None:
    """A row per profile cell (framework and setting): each block's milliseconds in every profiled step, a panel
    per device where the profiler times the devices apart (seed 004's Figures 4-3 and 4-4, one per GPU; forward and
    backward there, the optimizer's update being the first device's), else the first device's with the update (its
    Figures 4-5 to 4-12 in one); each step's share in no layer (its Figure 4-13) with the missing seconds summed at
    25/50/75/100 % of the steps; and each step's wall time beside the time the profiler accounts for, two lines
    (its Figure 4-14)."""
    rows, notes, run = profiled_cells(records)
    devices = max([len(kept.get("devices") or ()) or 1 for _, _, kept, _ in rows], default=1)
    panels = devices + 2
    fig, axes = with_notes(5.0 * panels + 1, 2.6 * max(1, len(rows)), notes, panels=panels, rows=max(1, len(rows)))
    for row, (cell, record, kept_profile, groups) in enumerate(rows):
        ours = axes[panels * row:panels * (row + 1)]
        apart = kept_profile.get("devices") or []
        per_device = [block_seconds(kept_profile, groups, device) for device in apart] or [
            block_seconds(kept_profile, groups)]
        colours = _block_colours(per_device[0])
        steps = np.arange(1, len(kept_profile["iteration_seconds"]) + 1)
        for process, (axis, blocks) in enumerate(zip(ours, per_device)):
            for block, seconds in blocks.items():
                axis.plot(steps, seconds * 1e3, color=colours[block], linewidth=1, label=block,
                          gid=f"block {cell} {block}" + (f" process {process}" if process else ""))
            axis.set(ylabel="ms (forward + backward)" if apart else "ms (forward + backward + update)",
                     title=f"{cell}: time per block" + (f", process {process}" if apart else "")
                     + f", rep {record['run']['repetition']}")
        ours[len(per_device) - 1].legend(fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5))
        for axis in ours[len(per_device):devices]:
            axis.axis("off")
        error, lines = ours[devices], ours[devices + 1]
        share, missing = unaccounted(kept_profile)
        error.plot(steps, share * 100, color="gray", linewidth=1, gid=f"unaccounted {cell}")
        for quarter, (step, seconds) in missing.items():
            error.axvline(step, color="lightgray", linewidth=0.8)
            error.annotate(f"{quarter}%: {seconds * 1e3:,.1f} ms", (step, 1), xycoords=("data", "axes fraction"),
                           fontsize=6, rotation=90, va="top", ha="right")
        error.set(ylabel="% of the step in no layer, no update", title=f"{cell}: per-iteration error")
        total = np.asarray(kept_profile["iteration_seconds"]) * 1e3
        lines.plot(steps, total, color="black", linewidth=1, label="the step's wall time", gid=f"total {cell}")
        lines.plot(steps, total * (1 - share), color="tab:blue", linewidth=1, label="profiled (layers + update)",
                   gid=f"profiled {cell}")
        lines.set(ylabel="ms", title=f"{cell}: total time vs profiled time")
        lines.legend(fontsize=6)
        for axis in ours:
            axis.title.set_fontsize(8)
            axis.set_xlabel("profiled step")
            axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    if not rows:
        for axis in axes:
            axis.axis("off")
    fig.suptitle(f"{run['dataset']} / {run['network']}: every profiled step (seed 004)", fontsize=10)
    save(fig, outputs)


def layer_phases(records: list[dict], outputs: list[Path]) -> None:
    """Seed 004's Figures 4-5 to 4-12 for every block at once: a row per profile cell (framework and setting: its
    batch among them), each block's forward milliseconds in every profiled step on the left and its backward on
    the right, a line per block (the first device's; the optimizer's update is in neither)."""
    rows, notes, run = profiled_cells(records)
    fig, axes = with_notes(11.0, 2.6 * max(1, len(rows)), notes, panels=2, rows=max(1, len(rows)))
    for row, (cell, record, kept_profile, groups) in enumerate(rows):
        steps = np.arange(1, len(kept_profile["iteration_seconds"]) + 1)
        for axis, phase in zip(axes[2 * row:2 * row + 2], ("forward", "backward")):
            phase_seconds = np.asarray(kept_profile[f"{phase}_seconds"])  # steps x layers, as a one-phase device
            blocks = block_seconds(kept_profile, groups, {"forward_seconds": phase_seconds,
                                                          "backward_seconds": np.zeros_like(phase_seconds)})
            colours = _block_colours(blocks)
            for block, seconds in blocks.items():
                axis.plot(steps, seconds * 1e3, color=colours[block], linewidth=1, label=block,
                          gid=f"{phase} {cell} {block}")
            axis.set(ylabel=f"ms ({phase})", xlabel="profiled step",
                     title=f"{cell}: each block's {phase} pass, rep {record['run']['repetition']}")
            axis.xaxis.set_major_locator(MaxNLocator(integer=True))
            axis.title.set_fontsize(8)
        axes[2 * row + 1].legend(fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5))
    if not rows:
        for axis in axes:
            axis.axis("off")
    fig.suptitle(f"{run['dataset']} / {run['network']}: each block's forward and backward time in every profiled "
                 "step (seed 004)", fontsize=10)
    save(fig, outputs)
