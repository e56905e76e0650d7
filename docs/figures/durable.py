"""Durable polling, as a timeline (docs/durable.rst): one remote task, started by
process A, which is killed; process B takes it over once A's lease has run out.

Four lanes, one per place where something happens: the remote service, process A
(its start call and its poll thread), the store, and process B. Time runs left
to right; the arrows are the calls between them.
"""

from __future__ import annotations

from matplotlib.patches import Rectangle
from timeline import Timeline

LANES = ["remote service", "process A", "store", "process B"]
timeline = Timeline(LANES, 12.0, (9.0, 3.9), fontsize=7)
axes, box, arrow, note, Y = (
    timeline.axes,
    timeline.box,
    timeline.arrow,
    timeline.note,
    timeline.y,
)


# Process A: the start call returns the task id; the poll thread writes it
# before the first poll (the crash window is between the two).
box(0.0, "process A", 1.1, "start call", "#d9ead3")
arrow(0.55, "process A", 0.55, "remote service", "start")
box(0.45, "remote service", 10.8, "the remote task runs", "#fff2cc")
axes.add_patch(
    Rectangle((1.1, Y["process A"] - 0.3), 0.5, 0.6, color="#f4cccc", zorder=0.5)
)
note(1.35, "process A", "crash window", "#990000", dy=-0.42)
box(1.6, "process A", 0.6, "add", "#ead1dc")
arrow(1.9, "process A", 1.9, "store", "write")
# The record, held by A under a lease that each sync renews.
box(1.9, "store", 5.4, "record held by A: lease renewed", "#cfe2f3")
for x in (2.5, 3.6, 4.7):
    box(x, "process A", 0.7, "poll round", "#f3f3f3")
for x in (3.35, 4.45):
    arrow(x, "process A", x, "store")
note(3.9, "process A", "renew: every third of the lease")
# A is killed: nothing renews its lease any more.
axes.text(
    5.7,
    Y["process A"],
    "X",
    ha="center",
    va="center",
    fontsize=14,
    color="#990000",
    fontweight="bold",
)
note(5.7, "process A", "killed", "#990000")
axes.annotate(
    "",
    xy=(7.3, Y["store"] + 0.3),
    xytext=(4.45, Y["store"] + 0.3),
    arrowprops={"arrowstyle": "<->", "color": "0.55", "linewidth": 0.8},
)
note(5.9, "store", "lease, from the last renewal", dy=0.36)
# Process B: its resume() claims the record once the lease has run out, and
# polls it as attach() polls; the future resolves and the record goes.
box(6.3, "process B", 0.9, "resume()", "#cfe2f3")
note(6.75, "process B", "nothing to claim yet", "0.45", dy=-0.42)
box(7.5, "process B", 0.9, "resume()", "#cfe2f3")
arrow(7.95, "process B", 7.95, "store", "claim")
box(8.0, "store", 3.2, "held by B", "#d9d2e9")
for x in (8.6, 9.7):
    box(x, "process B", 0.8, "poll round", "#f3f3f3")
box(10.8, "process B", 0.9, "poll round", "#ead1dc")
arrow(11.25, "process B", 11.25, "store", "remove")
note(11.25, "process B", "finished: future resolved", dy=-0.42)
note(7.3, "store", "lease runs out", "#990000", dy=-0.42)
timeline.figure.tight_layout()
