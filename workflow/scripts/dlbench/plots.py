"""One bar chart per (dataset, network, metric), like the thesis's Figures 5.2-5.4."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import seaborn as sns

from .aggregate import METRICS, appendix, runs_table


def figure(records: list[dict], metric: str, outputs: list[Path]) -> None:
    """Grouped bars (framework × device), error bars = sd over repetitions; missing cells say why."""
    runs = runs_table(records)
    dataset, network = runs["dataset"].iloc[0], runs["network"].iloc[0]
    _, _, unit = METRICS[metric]
    values = runs.dropna(subset=[metric])
    frameworks = sorted(runs["framework"].unique())
    devices = sorted(runs["device"].unique())
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(frameworks) * max(1, len(devices)) / 2 + 3), 4))
    if len(values):
        sns.barplot(data=values, x="framework", y=metric, hue="device", order=frameworks, hue_order=devices,
                    errorbar="sd", capsize=0.1, ax=ax)
    missing = appendix(runs).query("metric == @metric and n == 0")
    notes = [f"{r.framework} / {r.device}: {r.cell}" for r in missing.itertuples()]
    if notes:
        ax.text(0.01, 0.98, "\n".join(sorted(set(notes))[:8]), transform=ax.transAxes, va="top", fontsize=7,
                color="dimgray", wrap=True)
    ax.set(title=f"{dataset} / {network}: {metric.replace('_', ' ')}", xlabel="framework", ylabel=unit)
    if not len(values):  # no bars: still one slot per framework, so the notes sit on a readable axis
        ax.set(xticks=range(len(frameworks)), xlim=(-0.5, len(frameworks) - 0.5), yticks=[])
        ax.set_xticklabels(frameworks)
    if len(frameworks) > 4:  # long names such as keras-tensorflow would run into each other
        plt.setp(ax.get_xticklabels(), rotation=30, ha="right", rotation_mode="anchor")
    fig.tight_layout()
    for path in outputs:
        fig.savefig(path)
    plt.close(fig)
