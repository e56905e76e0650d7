"""The re-attach example (docs/examples/reattach.py): a run stopped mid-way and
restarted resolves every task and publishes none twice."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


@pytest.fixture(scope="module")
def reattach() -> Iterator[ModuleType]:
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(EXAMPLES))
        yield importlib.import_module("reattach")


@pytest.mark.parametrize(("tasks", "stop_after"), [(20, 8), (5, 0), (5, 5)])
def test_every_task_resolves_once_published_after_a_crash(
    reattach: ModuleType, tmp_path: Path, tasks: int, stop_after: int
) -> None:
    results, most = reattach.run(tasks, stop_after, tmp_path)

    assert results == {f"payload-{i}": f"PAYLOAD-{i}" for i in range(tasks)}
    assert most == 1


def test_the_restart_resumes_the_stored_tasks_without_publishing(
    reattach: ModuleType, tmp_path: Path
) -> None:
    payloads = [f"payload-{i}" for i in range(6)]
    reattach.first_run(tmp_path, 4)
    service = reattach.FakeService(tmp_path / "service.db")
    assert sum(service.publishes().values()) == 4

    reattach.second_run(tmp_path, payloads)

    assert service.publishes() == dict.fromkeys(payloads, 1)
    service.close()


def test_main_prints_a_summary(
    reattach: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    reattach.main(["--tasks", "6", "--stop-after", "3"])
    assert (
        "6 tasks resolved; most publishes of one payload: 1" in capsys.readouterr().out
    )
