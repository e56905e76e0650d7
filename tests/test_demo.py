"""The remote-task demo (docs/examples/publish.py and task_service.py), end to end
over HTTP on 127.0.0.1."""

from __future__ import annotations

import importlib
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import requests

from fluent_executors import Executors
from fluent_executors.testing import virtual_time

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"

# Tasks short enough for a run of 200 to take a second or two.
QUICK_TASKS = ["--min-duration", "0.1", "--max-duration", "0.5", "--interval", "0.2"]


@pytest.fixture(scope="module")
def examples() -> Iterator[None]:
    """Make the examples importable, as they are when run as scripts."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(EXAMPLES))
        yield


@pytest.fixture(scope="module")
def publish(examples: None) -> ModuleType:
    return importlib.import_module("publish")


@pytest.fixture(scope="module")
def task_service(examples: None) -> ModuleType:
    return importlib.import_module("task_service")


@pytest.fixture(scope="module")
def summary(publish: ModuleType) -> Any:
    """One run of the demo with 200 tasks, a fifth of them failing, and a tenth of
    the publish requests and of the searches answered 503 (with seed 7 the service
    answers the fourth search 503, and never more than two in a row)."""
    return publish.run(
        [
            "--tasks",
            "200",
            "--failure-rate",
            "0.2",
            "--publish-503-rate",
            "0.1",
            "--search-503-rate",
            "0.1",
            "--seed",
            "7",
            *QUICK_TASKS,
        ]
    )


def test_demo_accounts_for_every_task(summary: Any) -> None:
    assert (
        summary.finished + summary.failed + summary.cancelled + summary.timed_out == 200
    )
    assert summary.cancelled == 0
    assert summary.timed_out == 0
    assert summary.lost == 0


def test_demo_fails_the_futures_of_failed_tasks_with_task_failed(summary: Any) -> None:
    assert summary.failed > 0
    assert summary.failures == {"TaskFailed": summary.failed}


def test_demo_retries_every_publish_answered_503(summary: Any) -> None:
    assert summary.counted_by == "service"
    assert summary.publish_503s > 0
    assert summary.retries == summary.publish_503s


def test_demo_absorbs_every_search_answered_503(summary: Any) -> None:
    # No future failed because of them (the failures are all TaskFailed, above).
    assert summary.search_503s > 0
    assert summary.poll_errors_absorbed == summary.search_503s


def test_demo_starts_one_task_per_object_and_does_not_retry_failed_tasks(
    summary: Any, task_service: Any
) -> None:
    # Every publish request but those answered 503 started a task: one per object.
    assert summary.requests[task_service.PUBLISH] == 200 + summary.publish_503s


def test_demo_polls_every_task_in_far_fewer_requests_than_tasks(
    summary: Any, task_service: Any
) -> None:
    searches = summary.requests[task_service.SEARCH]
    assert 0 < searches < 200 / 4
    assert summary.requests[task_service.STATUS] == 0
    assert summary.status_checks >= 200  # each task was checked once or more


def test_main_prints_the_summary_and_exits_0(
    publish: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments = ["--tasks", "20", "--seed", "2", "--search-503-rate", "0.5"]
    assert publish.main([*arguments, "--publish-503-rate", "0.5", *QUICK_TASKS]) == 0

    output = capsys.readouterr().out
    summary = output[output.index("20 tasks in ") :]
    assert max(len(line) for line in summary.splitlines()) <= 88
    assert " cancelled, 0 timed out, 0 lost.\n" in summary
    assert "\nPublishing: " in summary
    assert "\nPolling with searches: " in summary
    assert "\nHTTP requests, counted by the service:\n" in summary
    flat = " ".join(summary.split())  # unwrapped
    assert (
        " lost: a future still pending after the executor's shutdown; there is "
        "none. " in flat
    )
    assert " the retry executor sent " in flat
    assert " the poll retry policy absorbed " in flat


def test_the_summary_says_in_words_what_failed(
    publish: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    assert publish.main(["--tasks", "5", "--failure-rate", "1", *QUICK_TASKS]) == 0

    summary = " ".join(capsys.readouterr().out.split())  # unwrapped
    assert " 0 finished, 5 failed, " in summary
    assert (
        "failed: 5 with TaskFailed, the tasks that the service failed on purpose "
        "(--failure-rate)." in summary
    )


def test_the_status_run_prints_only_what_applies_to_it(
    publish: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments = ["--tasks", "20", "--poll", "status", "--search-503-rate", "1"]
    assert publish.main([*arguments, *QUICK_TASKS]) == 0

    output = capsys.readouterr().out
    summary = output[output.index("20 tasks in ") :]
    assert "Polling with one GET /tasks/<task_id> per task and poll: " in summary
    assert "search" not in summary  # no searches made, none counted
    assert "absorbed" not in summary  # no failed poll to absorb


def test_without_a_terminal_the_demo_prints_a_progress_line_while_it_waits(
    publish: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    # Under pytest, as under nox, the standard streams are no terminal: no bar.
    assert publish.main(["--tasks", "20", *QUICK_TASKS]) == 0

    output = capsys.readouterr()
    progress = [line for line in output.out.splitlines() if " tasks ended, " in line]
    assert progress
    assert progress[-1] == "  20 of 20 tasks ended, 0 still pending"
    assert output.out.index(progress[-1]) < output.out.index("20 tasks in ")
    assert "task/s" not in output.err  # no tqdm bar


def test_cancel_after_cancels_the_remote_tasks_through_delete(
    publish: ModuleType, task_service: Any
) -> None:
    summary = publish.run(
        [
            "--tasks",
            "100",
            "--cancel-after",
            "0.5",
            "--interval",
            "0.1",
            # Tasks that cannot end before they are cancelled.
            "--min-duration",
            "60",
            "--max-duration",
            "60",
        ]
    )

    assert summary.cancelled == 100
    assert summary.timed_out == 0
    # Objects not yet published are cancelled on the thread pool, and those waiting
    # for a retry before it; every task that was started is cancelled on the
    # service, once.
    started = summary.requests[task_service.PUBLISH] - summary.publish_503s
    assert started > 0
    assert summary.requests[task_service.CANCEL] == started


def test_timeout_cancels_the_tasks_not_done_in_time(
    publish: ModuleType, task_service: Any
) -> None:
    summary = publish.run(
        [
            "--tasks",
            "20",
            # Long enough for every publish request to be answered first, so that
            # each timeout finds a task to cancel.
            "--timeout",
            "2",
            "--interval",
            "0.1",
            # No 503s: a publish still being retried when its timeout comes cannot
            # be stopped (as in more-executors), and ends with its own outcome.
            "--publish-503-rate",
            "0",
            # Tasks that cannot end in time.
            "--min-duration",
            "60",
            "--max-duration",
            "60",
        ]
    )

    assert summary.timed_out == 20
    assert summary.finished == summary.failed == summary.cancelled == 0
    started = summary.requests[task_service.PUBLISH] - summary.publish_503s
    assert started == 20
    assert summary.requests[task_service.CANCEL] == 20


def test_demo_gives_up_after_publish_attempts_answered_503(
    publish: ModuleType, task_service: Any
) -> None:
    summary = publish.run(["--tasks", "3", "--publish-503-rate", "1", *QUICK_TASKS])

    assert summary.failures == {"ServiceUnavailable": 3}
    assert summary.requests[task_service.PUBLISH] == 3 * publish.PUBLISH_ATTEMPTS
    assert summary.retries == 3 * (publish.PUBLISH_ATTEMPTS - 1)


def test_client_raises_service_unavailable_on_503(
    publish: ModuleType, task_service: Any
) -> None:
    service = task_service.TaskService(publish_503_rate=1)
    with task_service.TaskServer(service) as server, requests.Session() as session:
        client = publish.TaskClient(server.url, session)

        with pytest.raises(publish.ServiceUnavailable) as raised:
            client.publish("a")

    assert raised.value.response.status_code == 503
    assert client.answered_503()[task_service.PUBLISH] == 1


def test_a_failed_search_fails_the_futures_it_was_polling(
    publish: ModuleType, task_service: Any
) -> None:
    with task_service.TaskServer() as server, requests.Session() as session:
        client = publish.TaskClient(f"{server.url}/no-such-service", session)
        with (
            virtual_time() as clock,
            Executors.sync().with_poll(client.poll_tasks, default_interval=5.0) as ex,
        ):
            futures = [ex.submit(publish.PublishedTask, task_id=n) for n in range(5)]
            clock.advance(5.0)  # the first poll, and the next for the late joiners

            errors = [future.exception(timeout=0) for future in futures]

    for error in errors:
        assert isinstance(error, requests.HTTPError)
        assert error.response is not None
        assert error.response.status_code == 404


def test_service_cancels_a_task_under_way_once(task_service: Any) -> None:
    service = task_service.TaskService(
        min_duration=60, max_duration=60, publish_503_rate=0
    )
    with task_service.TaskServer(service) as server, requests.Session() as session:
        task_id = session.post(f"{server.url}/object/a/publish", timeout=10).json()[
            "task_id"
        ]

        first = session.delete(f"{server.url}/tasks/{task_id}", timeout=10)
        second = session.delete(f"{server.url}/tasks/{task_id}", timeout=10)
        state = session.get(f"{server.url}/tasks/{task_id}", timeout=10).json()

    assert first.status_code == 200
    assert second.status_code == 409
    assert state == {"task_id": task_id, "state": "cancelled"}


def test_service_refuses_to_cancel_an_ended_or_unknown_task(task_service: Any) -> None:
    service = task_service.TaskService(
        min_duration=0, max_duration=0, failure_rate=0, publish_503_rate=0
    )
    with task_service.TaskServer(service) as server, requests.Session() as session:
        task_id = session.post(f"{server.url}/object/a/publish", timeout=10).json()[
            "task_id"
        ]

        ended = session.delete(f"{server.url}/tasks/{task_id}", timeout=10)
        unknown = session.delete(f"{server.url}/tasks/{task_id + 1}", timeout=10)

    assert ended.status_code == 409
    assert unknown.status_code == 404


def test_service_search_reports_errors_and_leaves_out_unknown_tasks(
    task_service: Any,
) -> None:
    service = task_service.TaskService(
        min_duration=0,
        max_duration=0,
        failure_rate=1,
        publish_503_rate=0,
        search_503_rate=0,
    )
    with task_service.TaskServer(service) as server, requests.Session() as session:
        task_id = session.post(f"{server.url}/object/a/publish", timeout=10).json()[
            "task_id"
        ]

        found = session.post(
            f"{server.url}/tasks/search",
            json={"task_id": [task_id, task_id + 1]},
            timeout=10,
        ).json()

    assert found == [
        {"task_id": task_id, "state": "error", "error": "could not publish object 'a'"}
    ]


def test_service_answers_503_to_publish_at_the_given_rate_and_starts_no_task(
    task_service: Any,
) -> None:
    service = task_service.TaskService(publish_503_rate=1)
    with task_service.TaskServer(service) as server, requests.Session() as session:
        answer = session.post(f"{server.url}/object/a/publish", timeout=10)
        task = session.get(f"{server.url}/tasks/1", timeout=10)

    assert answer.status_code == 503
    assert task.status_code == 404
    assert service.answered_503()[task_service.PUBLISH] == 1
    assert service.request_counts()[task_service.PUBLISH] == 1


def test_service_refuses_a_publish_503_rate_outside_0_to_1(task_service: Any) -> None:
    with pytest.raises(ValueError, match="publish_503_rate"):
        task_service.TaskService(publish_503_rate=1.5)


def test_service_counts_requests_per_endpoint(task_service: Any) -> None:
    with task_service.TaskServer() as server, requests.Session() as session:
        session.post(f"{server.url}/object/a/publish", timeout=10)
        session.post(f"{server.url}/object/b/publish", timeout=10)
        session.get(f"{server.url}/tasks/1", timeout=10)
        session.get(f"{server.url}/no/such/endpoint", timeout=10)

        counts = server.service.request_counts()

    assert counts == {
        task_service.PUBLISH: 2,
        task_service.STATUS: 1,
        task_service.CANCEL: 0,
        task_service.SEARCH: 0,
        task_service.OBJECT_TASKS: 0,
    }


def test_server_leaves_no_thread_behind(task_service: Any) -> None:
    before = set(threading.enumerate())
    with task_service.TaskServer() as server, requests.Session() as session:
        for object_id in range(5):
            session.post(f"{server.url}/object/{object_id}/publish", timeout=10)

    assert set(threading.enumerate()) <= before


def test_demo_searches_at_most_100_tasks_at_once(
    publish: ModuleType, task_service: Any
) -> None:
    # 250 tasks under way together: a search of more than 100 ids would be refused
    # with a 400, which fails the futures of that poll with an HTTPError.
    summary = publish.run(
        [
            "--tasks",
            "250",
            "--min-duration",
            "1",
            "--max-duration",
            "1",
            "--failure-rate",
            "0",
            "--publish-503-rate",
            "0",
            "--search-503-rate",
            "0",
            "--interval",
            "0.2",
        ]
    )

    assert summary.finished == 250
    assert summary.failures == {}
    assert summary.requests[task_service.SEARCH] >= 3


def test_demo_polls_each_task_with_an_async_poll_function(
    publish: ModuleType, task_service: Any
) -> None:
    summary = publish.run(
        ["--tasks", "100", "--poll", "status", "--failure-rate", "0.2", *QUICK_TASKS]
    )

    assert summary.finished + summary.failed == 100
    assert summary.lost == 0
    assert set(summary.failures) <= {"TaskFailed"}
    assert summary.requests[task_service.SEARCH] == 0
    assert summary.requests[task_service.STATUS] == summary.status_checks >= 100


def test_poll_errors_within_the_policy_fail_no_future(
    publish: ModuleType, task_service: Any
) -> None:
    # Every other search answered 503: polling goes on, every future resolves.
    summary = publish.run(
        ["--tasks", "30", "--search-503-rate", "0.5", "--seed", "3", *QUICK_TASKS]
    )

    assert summary.search_503s > 0
    assert summary.poll_errors_absorbed == summary.search_503s
    assert summary.lost == 0
    assert set(summary.failures) <= {"TaskFailed"}


def test_service_refuses_a_search_of_more_than_100_ids(task_service: Any) -> None:
    service = task_service.TaskService(search_503_rate=0)
    with task_service.TaskServer(service) as server, requests.Session() as session:
        largest = session.post(
            f"{server.url}/tasks/search",
            json={"task_id": list(range(task_service.MAX_SEARCH))},
            timeout=10,
        )
        too_large = session.post(
            f"{server.url}/tasks/search",
            json={"task_id": list(range(task_service.MAX_SEARCH + 1))},
            timeout=10,
        )

    assert largest.status_code == 200
    assert too_large.status_code == 400
    assert "at most 100 task ids" in too_large.text


def test_service_answers_503_with_retry_after_to_searches_at_the_given_rate(
    task_service: Any,
) -> None:
    service = task_service.TaskService(search_503_rate=1)
    with task_service.TaskServer(service) as server, requests.Session() as session:
        answer = session.post(
            f"{server.url}/tasks/search", json={"task_id": [1]}, timeout=10
        )

    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == str(task_service.SEARCH_RETRY_AFTER)
    assert service.answered_503()[task_service.SEARCH] == 1


def test_the_poll_retry_policy_waits_at_least_the_retry_after(
    publish: ModuleType,
) -> None:
    policy = publish.RetryAfterPolicy(sleep=0.1, exception_base=Exception)
    failed: Any = Future()
    response = requests.Response()
    response.url = "http://service/tasks/search"
    failed.set_exception(publish.ServiceUnavailable(response, retry_after=7.0))
    other: Any = Future()
    other.set_exception(ConnectionError("dropped"))

    assert policy.sleep_time(1, failed) == 7.0
    assert policy.sleep_time(1, other) == 0.1
    assert policy.absorbed == 2


def test_crash_and_resume_publishes_each_object_once(examples: None) -> None:
    publish_resume = importlib.import_module("publish_resume")
    accounting = publish_resume.run(
        [
            "--tasks",
            "40",
            "--crash-after",
            "15",
            "--publish-503-rate",
            "0",
            *QUICK_TASKS,
        ]
    )

    assert accounting.crash_status == -signal.SIGKILL
    assert accounting.started >= 15
    # The 15th task is started and the process killed before its record is written.
    assert accounting.lost_in_window >= 1
    assert accounting.resumed == accounting.stored
    assert accounting.reconciled == accounting.lost_in_window
    assert sum(accounting.outcomes.values()) == 40
    assert accounting.publishes == {1: 40}
    assert accounting.accounted == 40
    assert accounting.twice == 0
    assert "published twice: 0" in accounting.report()
