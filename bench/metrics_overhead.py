"""The cost of metrics per future: a chain with the metric extras absent, installed
but turned off, and recording into each backend, side by side.

Run it with ``nox -s bench``, or directly with ``python bench/metrics_overhead.py``
(``--help`` for the options); with the default sizes it takes about a minute. The
modes that need a package which is not installed (``prometheus-client``,
``opentelemetry-api``, ``opentelemetry-sdk``) are reported as such and skipped.

The backends are chosen once, when ``fluent_executors`` is imported, so every mode
runs in an interpreter of its own (this script, with ``--child MODE``):

``absent``
    ``prometheus_client`` and ``opentelemetry`` cannot be imported (they are
    blocked in ``sys.modules``): a user without the ``prometheus`` and ``otel``
    extras. The baseline.
``off``
    Both installed, ``FLUENT_EXECUTORS_METRICS=0``.
``prometheus``
    ``FLUENT_EXECUTORS_METRICS=prometheus``: recording into the default registry.
``otel-api``
    ``FLUENT_EXECUTORS_METRICS=otel`` and no meter provider set: the API's no-op
    instruments, what a library user pays when the application configures no SDK.
``otel-sdk``
    ``FLUENT_EXECUTORS_METRICS=otel`` with the SDK's ``MeterProvider`` and an
    ``InMemoryMetricReader`` (aggregating, never exporting).
``both``
    Prometheus and the OpenTelemetry SDK at once.

In each interpreter, N trivial callables go through a bare
``concurrent.futures.ThreadPoolExecutor(8)`` and through the chain
``Executors.thread_pool(8).with_map(f).with_retry().with_timeout(60)`` (four layers,
so four futures recorded per callable; the chain of ``bench/chain.py``), alternately,
``--inner`` times each. From the first submit to all done, two times are taken,
divided by N: the wall time (:func:`time.perf_counter`), and the CPU time of the
whole process, all its threads (:func:`time.process_time`), which a busy machine
disturbs much less (``--clock`` picks the one reported). The parent runs every mode
once per round (``--repeat``), rotating their order from round to round, and
reports the best of the rounds; each ratio is between best runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any

import _harness

# mode: (FLUENT_EXECUTORS_METRICS, block the packages, set up the OpenTelemetry SDK)
MODES: dict[str, tuple[str, bool, bool]] = {
    "absent": ("1", True, False),
    "off": ("0", False, False),
    "prometheus": ("prometheus", False, False),
    "otel-api": ("otel", False, False),
    "otel-sdk": ("otel", False, True),
    "both": ("prometheus,otel", False, True),
}
REQUIRES = {
    "absent": (),
    "off": (),
    "prometheus": ("prometheus_client",),
    "otel-api": ("opentelemetry.metrics",),
    "otel-sdk": ("opentelemetry.sdk.metrics",),
    "both": ("prometheus_client", "opentelemetry.sdk.metrics"),
}


# -- the child: one mode, in its own interpreter --------------------------------------


def child(mode: str, n: int, inner: int) -> dict[str, Any]:
    """Set up ``mode``, import the library, time bare and chain ``inner`` times."""
    _, block, sdk = MODES[mode]
    if block:
        sys.modules["prometheus_client"] = None  # type: ignore[assignment]
        sys.modules["opentelemetry"] = None  # type: ignore[assignment]
    if sdk:
        from opentelemetry import metrics
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader

        metrics.set_meter_provider(
            MeterProvider(metric_readers=[InMemoryMetricReader()])
        )

    from _fluent_executors import metrics as _metrics

    def make_chain() -> Executor:
        return _harness.our_chain(name="bench")

    def run(make: Callable[[], Executor], offset: int) -> tuple[float, float]:
        elapsed, cpu = _harness.time_tasks(
            make(),
            n,
            what=mode,
            offset=offset,
            clocks=[time.perf_counter, time.process_time],
        )
        return elapsed / n, cpu / n

    runs: dict[str, list[tuple[float, float]]] = {"bare": [], "chain": []}
    run(make_chain, 1)  # warm up: imports, the scheduler thread
    for _ in range(inner):
        runs["bare"].append(run(_harness.bare_pool, 0))
        runs["chain"].append(run(make_chain, 1))
    result: dict[str, Any] = {"backends": list(_metrics.BACKENDS)}
    for contender, times in runs.items():
        result[contender] = min(wall for wall, _ in times)
        result[f"{contender}_cpu"] = min(cpu for _, cpu in times)
    return result


# -- the parent: every mode, side by side ---------------------------------------------


def _available(mode: str) -> bool:
    import importlib.util

    for module in REQUIRES[mode]:
        try:
            if importlib.util.find_spec(module) is None:
                return False
        except ModuleNotFoundError:
            return False
    return True


def run_child(mode: str, n: int, inner: int) -> dict[str, Any]:
    env = {**os.environ, _harness.METRICS_ENV_VAR: MODES[mode][0]}
    completed = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            mode,
            "--n",
            str(n),
            "--inner",
            str(inner),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"mode {mode} failed:\n{completed.stderr}")
    result: dict[str, Any] = json.loads(completed.stdout)
    return result


def measure(
    modes: Sequence[str], n: int, rounds: int, inner: int
) -> dict[str, list[dict[str, Any]]]:
    results: dict[str, list[dict[str, Any]]] = {mode: [] for mode in modes}
    for round_ in range(rounds):
        for mode in _harness.rotated(modes, round_):
            result = run_child(mode, n, inner)
            results[mode].append(result)
            print(
                f"  round {round_ + 1}/{rounds}  {mode:<10}  "
                f"bare {result['bare'] * 1e6:7.2f} us  "
                f"chain {result['chain'] * 1e6:7.2f} us  "
                f"chain cpu {result['chain_cpu'] * 1e6:7.2f} us",
                file=sys.stderr,
                flush=True,
            )
    return results


def report(results: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> None:
    """Print and write the table of the modes."""
    print(
        f"{_harness.platform_summary()}; N={args.n:,}; best of {args.repeat} "
        f"rounds, each the best of {args.inner} runs; "
        f"clock: {_harness.CLOCK_NAMES[args.clock]}"
    )
    print(f"chain: {_harness.CHAIN}")
    suffix = "_cpu" if args.clock == "cpu" else ""

    def best(mode: str, contender: str) -> float | None:
        runs = results.get(mode)
        return min(float(r[contender + suffix]) for r in runs) if runs else None

    names = {
        "absent": "no metric package installed",
        "off": "installed, ``FLUENT_EXECUTORS_METRICS=0``",
        "prometheus": "``prometheus-client``",
        "otel-api": "``opentelemetry-api`` without an SDK",
        "otel-sdk": "``opentelemetry-sdk``",
        "both": "Prometheus and the OpenTelemetry SDK",
    }
    _harness.Report("metrics_overhead", args).table(
        "metrics_overhead",
        ["Metrics", "bare us", "chain us", "chain / no metric package"],
        [
            [
                names[mode],
                _harness.format_us(best(mode, "bare")),
                _harness.format_us(best(mode, "chain")),
                _harness.format_ratio(
                    _harness.divide(best(mode, "chain"), best("absent", "chain"))
                ),
            ]
            for mode in results
        ],
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Cost per future of the chain thread_pool(8).with_map(f)"
        ".with_retry().with_timeout(60) without metrics and with each backend.",
    )
    _harness.add_options(parser)
    parser.add_argument(
        "--n", type=int, default=None, help="callables per run (default: 20,000)"
    )
    parser.add_argument(
        "--inner", type=int, default=1, help="runs per mode and round (default: 1)"
    )
    parser.add_argument(
        "--modes",
        default=",".join(MODES),
        help=f"comma-separated modes (default: {','.join(MODES)})",
    )
    parser.add_argument("--child", choices=list(MODES), help=argparse.SUPPRESS)
    args, _ = _harness.parse_options(parser, argv)
    args.n = args.n or (2_000 if args.quick else 20_000)
    if args.child:
        print(json.dumps(child(args.child, args.n, args.inner)))
        return 0
    if min(args.n, args.inner) < 1:
        parser.error("--n and --inner must be >= 1")
    modes = [mode for mode in args.modes.split(",") if mode]
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown:
        parser.error(f"unknown modes {unknown}; expected some of {list(MODES)}")
    for mode in [mode for mode in modes if not _available(mode)]:
        print(f"{mode}: {', '.join(REQUIRES[mode])} not installed, skipped")
        modes.remove(mode)
    report(measure(modes, args.n, args.repeat, args.inner), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
