"""What ``import fluent_executors`` costs, beside ``import concurrent.futures``.

Run it with ``nox -s bench``, or directly with ``python bench/import_time.py``. It
takes a few seconds.

Each import runs in a fresh interpreter, ``python -X importtime -c "import X"``, and
the figure is the cumulative microseconds that ``-X importtime`` reports for the
module ``X`` itself (its own imports included: ``fluent_executors`` imports
``concurrent.futures``), the best of ``--repeat`` interleaved runs. The bytecode is
cached first: one import of each runs before the timed ones with
``PYTHONDONTWRITEBYTECODE`` removed from the environment (a machine that sets it
would otherwise compile every module on every run), and so do the timed ones.

``fluent_executors``
    with ``prometheus_client`` and ``opentelemetry`` impossible to import, as for a
    user who installed neither (the library then records no metrics);
``fluent_executors`` with metrics
    with them importable, if installed: the library imports them at once to record
    metrics (reported beside, no target);
``fluent_executors``, every public name
    ``import fluent_executors`` then ``from fluent_executors import *``, without
    metric packages: the import imports the facade only, and each other public name
    is imported from its module on first use, so this is what a program that uses
    every executor pays in all (reported beside, no target). Its figure is the sum
    of the cumulative times of every import made at the top level from the first
    ``import fluent_executors`` on (``ProcessPoolExecutor`` and the stats snapshots
    among them: multiprocessing, dataclasses and inspect);
``fluent_executors``, thread pool, poll and retry
    the same sum for ``import fluent_executors`` and the modules that
    ``Executors.thread_pool(4).with_poll(fn).with_retry()`` imports (reported
    beside, no target).

Target (checked unless ``--no-check``): ``import fluent_executors`` at most 2x
``import concurrent.futures``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections.abc import Sequence

import _harness
from _harness import Target

BLOCK = "".join(f"sys.modules[{name!r}] = None; " for name in _harness.METRIC_PACKAGES)
EVERY_NAME = "fluent_executors, every public name"
POLL_RETRY = "fluent_executors, thread pool, poll and retry"
VARIANTS: dict[str, tuple[str, str, str]] = {
    # name: (module, the statements before its import, those after it)
    "concurrent.futures": ("concurrent.futures", "", ""),
    "fluent_executors": ("fluent_executors", f"import sys; {BLOCK}", ""),
    "fluent_executors with metrics": ("fluent_executors", "", ""),
    EVERY_NAME: (
        "fluent_executors",
        f"import sys; {BLOCK}",
        "; from fluent_executors import *",
    ),
    POLL_RETRY: (
        "fluent_executors",
        f"import sys; {BLOCK}",
        "; import fluent_executors.pools, fluent_executors.poll, "
        "fluent_executors.retry",
    ),
}
MAX_RATIO = 2.0


def cumulative_us(variant: str) -> int:
    """Microseconds ``-X importtime`` reports for the variant's module, one run."""
    module, prelude, after = VARIANTS[variant]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.pop(_harness.METRICS_ENV_VAR, None)
    code = f"{prelude}import {module}{after}"
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    # Each line: self us | cumulative us | the module, indented by its depth; an
    # import is reported after those it made.
    lines = re.findall(
        r"^import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)$", completed.stderr, re.M
    )
    top = [(int(us), name) for us, indent, name in lines if len(indent) == 1]
    names = [name for _, name in top]
    if module not in names:
        raise AssertionError(f"no -X importtime line for {module}")
    first = names.index(module)
    if not after:
        return top[first][0]
    return sum(us for us, _ in top[first:])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _harness.add_options(parser)
    args, _ = _harness.parse_options(parser, argv)
    variants = list(VARIANTS)
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        variants.remove("fluent_executors with metrics")
    for variant in variants:
        cumulative_us(variant)  # not timed: writes the bytecode caches
    times: dict[str, list[int]] = {v: [] for v in variants}
    for round_ in range(args.repeat):
        for variant in _harness.rotated(variants, round_):
            times[variant].append(cumulative_us(variant))
    best = {v: min(t) for v, t in times.items()}
    print(
        f"{_harness.platform_summary()}; best of {args.repeat} runs; "
        "python -X importtime, cumulative, bytecode cached"
    )
    out = _harness.Report("import_time", args)
    base = best["concurrent.futures"]
    names = {
        "concurrent.futures": "``import concurrent.futures``",
        "fluent_executors": "``import fluent_executors``, no metric package",
        "fluent_executors with metrics": "``import fluent_executors``, "
        "prometheus-client and opentelemetry-api installed",
        EVERY_NAME: "``import fluent_executors``, then every public name "
        "(``from fluent_executors import *``), no metric package",
        POLL_RETRY: "``import fluent_executors``, then the modules of "
        "``thread_pool(4).with_poll(fn).with_retry()``, no metric package",
    }
    out.table(
        "import_time",
        ["Import", "ms", "/ concurrent.futures"],
        [
            [names[v], f"{us / 1e3:.1f}", _harness.format_ratio(us / base)]
            for v, us in best.items()
        ],
    )
    passed = out.check(
        [
            Target(
                "import fluent_executors / import concurrent.futures",
                best["fluent_executors"] / base,
                "<=",
                MAX_RATIO,
            )
        ]
    )
    return _harness.finish(passed, args)


if __name__ == "__main__":
    sys.exit(main())
