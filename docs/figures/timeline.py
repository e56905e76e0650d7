"""What the timeline figures share (``poll_round.py``, ``durable.py``): lanes, one
per place where something runs, time running left to right, boxes for spans of
work or state, and arrows for the hand-offs between lanes. Not a figure itself:
the plot directive puts this directory on ``sys.path`` for the figures."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch


class Timeline:
    """A figure of ``lanes`` (top to bottom), ``width`` time units wide.

    Args:
        lanes: the lanes' names, top first.
        width: the time axis runs from -0.3 to ``width + 0.3``.
        size: the figure's size in inches.
        fontsize: of the boxes' text; the arrows' is 1.5 points smaller.
    """

    def __init__(
        self,
        lanes: list[str],
        width: float,
        size: tuple[float, float],
        fontsize: float = 8,
    ) -> None:
        self.y = {lane: len(lanes) - 1 - i for i, lane in enumerate(lanes)}
        self.fontsize = fontsize
        self.figure: Figure
        self.figure, self.axes = plt.subplots(figsize=size)
        axes = self.axes
        axes.set_xlim(-0.3, width + 0.3)
        axes.set_ylim(-0.7, len(lanes) - 0.3)
        axes.set_yticks([self.y[lane] for lane in lanes], lanes)
        axes.set_xticks([])
        axes.set_xlabel("time")
        for side in ("top", "right", "left"):
            axes.spines[side].set_visible(False)
        for lane in lanes:
            axes.axhline(self.y[lane], color="0.88", linewidth=1.0, zorder=0)

    def box(self, x: float, lane: str, width: float, text: str, color: str) -> None:
        """A span of work or state in ``lane`` from ``x`` to ``x + width``."""
        self.axes.add_patch(
            FancyBboxPatch(
                (x, self.y[lane] - 0.22),
                width,
                0.44,
                boxstyle="round,pad=0.02,rounding_size=0.08",
                facecolor=color,
                edgecolor="0.35",
                linewidth=0.8,
            )
        )
        self.axes.text(
            x + width / 2,
            self.y[lane],
            text,
            ha="center",
            va="center",
            fontsize=self.fontsize,
        )

    def arrow(
        self, x0: float, lane0: str, x1: float, lane1: str, text: str = ""
    ) -> None:
        """A hand-off from ``lane0`` at ``x0`` to ``lane1`` at ``x1``, its
        ``text`` beside it."""
        self.axes.add_patch(
            FancyArrowPatch(
                (x0, self.y[lane0]),
                (x1, self.y[lane1]),
                arrowstyle="-|>",
                mutation_scale=10,
                color="0.25",
                linewidth=0.9,
                shrinkA=9,
                shrinkB=9,
            )
        )
        if text:
            self.axes.text(
                (x0 + x1) / 2 + 0.08,
                (self.y[lane0] + self.y[lane1]) / 2,
                text,
                fontsize=self.fontsize - 1.5,
                color="0.25",
                va="center",
            )

    def note(
        self, x: float, lane: str, text: str, color: str = "0.3", dy: float = 0.3
    ) -> None:
        """A line of text ``dy`` above ``lane`` (below it if negative), at ``x``."""
        self.axes.text(
            x,
            self.y[lane] + dy,
            text,
            ha="center",
            fontsize=self.fontsize - 1.5,
            color=color,
        )
