"""The async example (docs/examples/aio_publish.py, on the "Async programs" page)
against the task service over real HTTP, on both backends: every task resolved,
with one search per round for all of them."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


@pytest.fixture
def aio_publish() -> Iterator[ModuleType]:
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(EXAMPLES))
        yield importlib.import_module("aio_publish")


@pytest.mark.parametrize("backend", ["trio", "asyncio"])
def test_every_task_resolves_with_few_searches(
    aio_publish: ModuleType, backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    quick = ["--min-duration", "0.1", "--max-duration", "0.5"]
    aio_publish.main(["--tasks", "150", "--backend", backend, *quick])
    out = capsys.readouterr().out
    tasks = ast.literal_eval(out.split("tasks:", 1)[1].splitlines()[0])
    requests = ast.literal_eval(out.split("service requests:", 1)[1].splitlines()[0])
    assert tasks.get("finished", 0) + tasks.get("error", 0) == 150
    # One search per round (of at most 100 ids), a round a second: far fewer
    # than the 150 requests a round of per-task polling would make.
    assert requests["POST /tasks/search"] < 30
    assert requests["GET /tasks/<task_id>"] == 0
