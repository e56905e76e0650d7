"""The life of one future of a poll executor, as a timeline (docs/poll.rst).

Four lanes, one per place where something runs: the caller's thread, the delegate
(a thread pool), the poll thread, and the remote service. Time runs left to right;
the arrows are the hand-offs between them.
"""

from __future__ import annotations

from timeline import Timeline

LANES = ["caller", "delegate (thread pool)", "poll thread", "remote service"]
timeline = Timeline(LANES, 11.0, (9.0, 3.6))
axes, box, arrow, Y = timeline.axes, timeline.box, timeline.arrow, timeline.y


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
timeline.figure.tight_layout()
