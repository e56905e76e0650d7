"""The life of one future of a poll executor, as a timeline (docs/poll.rst).

Four lanes, one per place where something runs: the caller's thread, the delegate
(a thread pool), the poll thread, and the remote service. Time runs left to right;
the arrows are the hand-offs between them.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

LANES = ["caller", "delegate (thread pool)", "poll thread", "remote service"]
Y = {lane: len(LANES) - 1 - i for i, lane in enumerate(LANES)}

figure, axes = plt.subplots(figsize=(9.0, 3.6))
axes.set_xlim(-0.3, 11.3)
axes.set_ylim(-0.7, len(LANES) - 0.3)
axes.set_yticks([Y[lane] for lane in LANES], LANES)
axes.set_xticks([])
axes.set_xlabel("time")
for side in ("top", "right", "left"):
    axes.spines[side].set_visible(False)
for lane in LANES:
    axes.axhline(Y[lane], color="0.88", linewidth=1.0, zorder=0)


def box(x: float, lane: str, width: float, text: str, color: str) -> None:
    """A span of work in ``lane`` from ``x`` to ``x + width``."""
    axes.add_patch(
        FancyBboxPatch(
            (x, Y[lane] - 0.22),
            width,
            0.44,
            boxstyle="round,pad=0.02,rounding_size=0.08",
            facecolor=color,
            edgecolor="0.35",
            linewidth=0.8,
        )
    )
    axes.text(x + width / 2, Y[lane], text, ha="center", va="center", fontsize=8)


def arrow(x0: float, lane0: str, x1: float, lane1: str, text: str = "") -> None:
    """A hand-off from ``lane0`` at ``x0`` to ``lane1`` at ``x1``."""
    axes.add_patch(
        FancyArrowPatch(
            (x0, Y[lane0]),
            (x1, Y[lane1]),
            arrowstyle="-|>",
            mutation_scale=10,
            color="0.25",
            linewidth=0.9,
            shrinkA=9,
            shrinkB=9,
        )
    )
    if text:
        axes.text(
            (x0 + x1) / 2 + 0.08,
            (Y[lane0] + Y[lane1]) / 2,
            text,
            fontsize=7,
            color="0.25",
            va="center",
        )


# 1. submit: the caller gets a pending future at once.
box(0.0, "caller", 1.0, "submit(fn)", "#cfe2f3")
arrow(0.5, "caller", 1.4, "delegate (thread pool)")
# 2. the delegate runs fn, which starts the remote task and returns its id.
box(1.2, "delegate (thread pool)", 1.6, "fn(): publish", "#d9ead3")
arrow(2.0, "delegate (thread pool)", 2.0, "remote service", "start task")
box(1.8, "remote service", 7.9, "the remote task runs", "#fff2cc")
arrow(2.8, "delegate (thread pool)", 3.2, "poll thread", "task id")
# 3. polls: one call of the poll function for every future being polled.
box(3.2, "poll thread", 1.0, "poll #1", "#ead1dc")
arrow(3.7, "poll thread", 3.7, "remote service", "running")
axes.text(3.7, Y["poll thread"] + 0.3, "defer(2.5)", ha="center", fontsize=7)
box(5.0, "poll thread", 1.0, "poll #2", "#f3f3f3")
axes.text(
    5.5, Y["poll thread"] + 0.3, "others only", ha="center", fontsize=7, color="0.4"
)
box(6.8, "poll thread", 1.0, "poll #3", "#ead1dc")
arrow(7.3, "poll thread", 7.3, "remote service", "running")
box(8.8, "poll thread", 1.0, "poll #4", "#ead1dc")
arrow(9.3, "poll thread", 9.3, "remote service", "finished")
# 4. the poll function resolves the future; the caller's result() returns.
arrow(9.8, "poll thread", 10.1, "caller", "yield_result()")
box(9.9, "caller", 0.6, "done", "#cfe2f3")
axes.annotate(
    "",
    xy=(10.0, Y["caller"] + 0.3),
    xytext=(0.5, Y["caller"] + 0.3),
    arrowprops={"arrowstyle": "<->", "color": "0.55", "linewidth": 0.8},
)
axes.text(
    5.2,
    Y["caller"] + 0.42,
    "the future is pending: result() waits",
    ha="center",
    fontsize=7,
    color="0.35",
)
figure.tight_layout()
