"""The Example of README.rst runs as printed against the task service of the
repository (docs/examples/task_service.py), and reports every future: the code run
here is read from the README, so the two cannot drift apart."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"


def readme_example() -> str:
    """The Python code block of the README's Example section."""
    readme = (ROOT / "README.rst").read_text()
    section = readme.split("\nExample\n-------\n", 1)[1].split("\n-----", 1)[0]
    block = section.split(".. code-block:: python\n", 1)[1]
    lines = []
    for line in block.splitlines()[1:]:  # after the blank line that opens it
        if line and not line.startswith("    "):
            break  # the text after the block
        lines.append(line)
    return textwrap.dedent("\n".join(lines))


@pytest.fixture
def task_service() -> Iterator[Any]:
    """The task service of the demo on a free port of 127.0.0.1, with short tasks,
    a fifth of them failing, and 503 answers for the example to ride out."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        import task_service
    finally:
        sys.path.remove(str(EXAMPLES))
    service = task_service.TaskService(
        min_duration=0.1,
        max_duration=0.5,
        failure_rate=0.2,
        seed=2,  # the service answers the third and fourth searches 503
        publish_503_rate=0.05,
        search_503_rate=0.1,
    )
    with task_service.TaskServer(service) as server:
        yield server


def test_the_readme_example_runs_against_the_task_service(
    task_service: Any, tmp_path: Path
) -> None:
    code = readme_example()
    assert 'BASE = os.environ.get("TASK_SERVICE_URL", "http://127.0.0.1:8000")' in code
    assert "poll_retry_policy=" in code
    script = tmp_path / "example.py"
    script.write_text(code)
    path = os.pathsep.join([str(ROOT / "src"), *sys.path])
    env = {**os.environ, "PYTHONPATH": path, "TASK_SERVICE_URL": task_service.url}

    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    first, *failures = done.stdout.splitlines()
    counts = re.fullmatch(r"(\d+) tasks finished, (\d+) failed:", first)
    assert counts is not None, done.stdout
    finished, failed = int(counts[1]), int(counts[2])
    assert finished + failed == 100
    assert 0 < failed == len(failures)
    # Only the tasks the service failed on purpose: no 503 failed a future.
    for line in failures:
        assert re.fullmatch(r"  RuntimeError: could not publish object '\d+'", line)
    answered_503 = task_service.service.answered_503()
    assert answered_503["POST /tasks/search"] > 0
    assert answered_503["POST /object/<id>/publish"] > 0


def test_the_readme_starts_the_service_where_the_example_looks_for_it() -> None:
    readme = (ROOT / "README.rst").read_text()
    assert "    python3 docs/examples/task_service.py\n" in readme
    service = (EXAMPLES / "task_service.py").read_text()
    assert 'default="127.0.0.1"' in service
    assert "default=8000," in service
