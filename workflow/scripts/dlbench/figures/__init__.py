"""The figures: each reads its numbers from the appendix (:mod:`dlbench.tables`) or draws a record's own
series (every step's time, the accuracy curve, the layers); one colour per framework in all of them."""
from __future__ import annotations

import io
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import matplotlib.ticker
import seaborn as sns

from .. import files
from ..registry import REGISTRY as FRAMEWORKS


def _framework_colours() -> dict:
    """One colour per framework in every figure, in the registry's order: tab20's ten strong colours, then for each
    further framework the colour of seaborn's tab20, tab20b, tab20c, Dark2 and Set1 farthest (in RGB) from those
    taken, so that no two come close however many releases the registry grows (tab10's repeat after ten)."""
    tab20 = sns.color_palette("tab20")
    palettes = ("tab20b", "tab20c", "Dark2", "Set1")
    pool = [*tab20[1::2], *(colour for name in palettes for colour in sns.color_palette(name))]

    def farthest() -> tuple:
        return max(pool, key=lambda colour: min(sum((a - b) ** 2 for a, b in zip(colour, other)) ** 0.5
                                                for other in taken))
    taken = []
    for index in range(len(FRAMEWORKS)):
        taken.append(tab20[2 * index] if index < 10 else farthest())
    return dict(zip(FRAMEWORKS, taken, strict=True))


FRAMEWORK_COLOURS = _framework_colours()


def framework_order(names) -> list[str]:
    return [name for name in FRAMEWORKS if name in set(names)]


def with_notes(width: float, height: float, notes: list[str], panels: int = 1, rows: int = 1):
    """A figure with its plot's ``panels`` side by side on top (``rows`` of them, ``height`` in all; the axes
    row by row) and, below them, ``notes`` (why cells are missing) wrapped to the figure's width, so that they
    never run under a legend or a bar."""
    lines = [line for note in notes for line in textwrap.wrap(note, width=int(width * 15), subsequent_indent="  ")]
    notes_height = 0.14 * len(lines) + 0.1 if lines else 0.0
    fig = plt.figure(figsize=(width, height + notes_height), layout="constrained")
    grid = fig.add_gridspec(rows + 1, panels, height_ratios=[height / rows] * rows + [max(notes_height, 1e-3)])
    text = fig.add_subplot(grid[rows, :])
    text.axis("off")
    text.text(0, 1, "\n".join(lines), va="top", fontsize=7, color="dimgray", transform=text.transAxes)
    return fig, [fig.add_subplot(grid[row, k]) for row in range(rows) for k in range(panels)]


def plain_log(axis, span: float) -> None:
    """A log axis labelled in plain numbers at 1, 2 and 5 of each decade (at each decade alone where it spans
    many), not in powers of ten."""
    axis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1, 2, 5) if span < 1e3 else (1,)))
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:,.6g}"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def save(fig, outputs: list[Path]) -> None:
    """Every figure is laid out by matplotlib's constrained layout (made with ``layout="constrained"``); each file
    written by the one write primitive (:func:`dlbench.files.write_bytes`), in the format its suffix names."""
    for path in outputs:
        drawn = io.BytesIO()
        fig.savefig(drawn, format=Path(path).suffix.removeprefix("."), bbox_inches="tight")
        files.write_bytes(path, drawn.getvalue())
    plt.close(fig)
