"""A chain of executors as nested boxes (docs/guide.rst): the order of the
``with_*`` calls, innermost first, and the way a callable and its future travel.

The chain is the guide's: ``Executors.thread_pool(8).with_poll(...)
.with_timeout(600.0).with_retry()``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

# Outermost first: (what the call was, what the layer does, fill colour).
LAYERS = [
    (
        "4  .with_retry()",
        "RetryExecutor: submits the whole chain again on failure",
        "#f4cccc",
    ),
    (
        "3  .with_timeout(600.0)",
        "TimeoutExecutor: cancels a future not done in 600 s",
        "#fff2cc",
    ),
    (
        "2  .with_poll(poll_tasks)",
        "PollExecutor: resolves the future when the task ends",
        "#d9ead3",
    ),
    ("1  Executors.thread_pool(8)", "ThreadPoolExecutor: runs the callable", "#cfe2f3"),
]

figure, axes = plt.subplots(figsize=(8.0, 4.4))
axes.set_xlim(0, 10)
axes.set_ylim(0, 6.7)
axes.axis("off")

step = 0.72  # how much each layer is inset in its wrapper
for depth, (call, role, colour) in enumerate(LAYERS):
    x = 0.2 + depth * step
    y = 0.2 + depth * step
    width = 7.2 - 2 * depth * step
    height = 5.9 - 2 * depth * step
    axes.add_patch(
        FancyBboxPatch(
            (x, y),
            width,
            height,
            boxstyle="round,pad=0.02,rounding_size=0.12",
            facecolor=colour,
            edgecolor="0.3",
            linewidth=1.0,
        )
    )
    axes.text(
        x + 0.15,
        y + height - 0.2,
        call,
        fontsize=9,
        family="monospace",
        va="top",
        fontweight="bold",
    )
    axes.text(x + 0.15, y + height - 0.45, role, fontsize=7.5, va="top", color="0.2")

# The callable goes in from the outside; the future comes back out.
axes.add_patch(
    FancyArrowPatch(
        (9.6, 4.7),
        (4.9, 3.1),
        arrowstyle="-|>",
        mutation_scale=12,
        color="0.25",
        linewidth=1.0,
        connectionstyle="arc3,rad=0.15",
    )
)
axes.text(8.0, 4.6, "submit(fn):\nfrom the outside in", fontsize=8, ha="center")
axes.add_patch(
    FancyArrowPatch(
        (3.6, 2.6),
        (9.6, 1.3),
        arrowstyle="-|>",
        mutation_scale=12,
        color="0.25",
        linewidth=1.0,
        linestyle="--",
        connectionstyle="arc3,rad=0.15",
    )
)
axes.text(
    8.4, 0.55, "the future's outcome:\nfrom the inside out", fontsize=8, ha="center"
)
axes.text(
    0.2,
    6.45,
    "Read a chain inside-out: each with_* call wraps everything written before it.",
    fontsize=8.5,
    color="0.2",
)
figure.tight_layout()
