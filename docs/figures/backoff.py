"""The retry backoff of ``ExceptionRetryPolicy`` with and without jitter
(docs/retry.rst), computed by the policy itself.

Defaults: ``sleep=1.0``, ``exponent=2.0``, ``max_sleep=120.0``. Without jitter the
delay after attempt n is ``min(sleep * exponent ** (n - 1), max_sleep)``; with
jitter ("full jitter") it is drawn uniformly between 0 and that value. The jittered
points are five clients' draws (seeded), so the figure is the same at every build.
"""

from __future__ import annotations

import random
from concurrent.futures import Future

import matplotlib.pyplot as plt

from fluent_executors import ExceptionRetryPolicy

ATTEMPTS = range(1, 10)
failed: Future[object] = Future()
failed.set_exception(OSError("transient"))

plain = ExceptionRetryPolicy(max_attempts=10)
jittered = ExceptionRetryPolicy(max_attempts=10, jitter=True)

figure, axes = plt.subplots(figsize=(7.0, 3.6))
axes.plot(
    list(ATTEMPTS),
    [plain.sleep_time(n, failed) for n in ATTEMPTS],
    marker="o",
    color="#1f4e79",
    label="jitter=False: sleep * exponent ** (n - 1), at most max_sleep",
)
random.seed(7)  # the policy draws from the random module
for client in range(5):
    axes.scatter(
        list(ATTEMPTS),
        [jittered.sleep_time(n, failed) for n in ATTEMPTS],
        s=14,
        color="#e69138",
        alpha=0.75,
        label="jitter=True: uniform between 0 and that (5 clients)"
        if client == 0
        else None,
    )
axes.set_xlabel("attempt n that failed")
axes.set_ylabel("delay before attempt n + 1 (s)")
axes.set_xticks(list(ATTEMPTS))
axes.grid(True, color="0.9")
axes.legend(fontsize=8, loc="upper left")
axes.set_title("ExceptionRetryPolicy() defaults: sleep=1.0, exponent=2.0", fontsize=9)
figure.tight_layout()
