"""Reprs that tell a chain apart in a log line, and describe() that shows all of it
in a debugger (docs/guide.rst, Reprs)."""

from __future__ import annotations

import concurrent.futures
import gc
import weakref

from fluent_executors import ExceptionRetryPolicy, Executors, f_return


def poll_nothing(descriptors: object) -> None:
    return None


def test_a_chains_repr_names_each_layer_once_and_the_name_once() -> None:
    executor = (
        Executors.thread_pool(4, name="publisher")
        .with_poll(poll_nothing, default_interval=2.0)
        .with_timeout(600.0)
        .with_retry(ExceptionRetryPolicy(max_attempts=2))
    )
    try:
        text = repr(executor)
    finally:
        executor.shutdown()

    assert text == (
        "<RetryExecutor name='publisher' <- TimeoutExecutor <- PollExecutor "
        "<- ThreadPoolExecutor>"
    )


def test_a_layer_named_otherwise_shows_its_name() -> None:
    executor = Executors.sync(name="s").with_map(str, name="parse").with_throttle(2)

    assert repr(executor) == (
        "<ThrottleExecutor name='parse' <- MapExecutor <- SyncExecutor name='s'>"
    )


def test_the_repr_says_which_layers_are_shut_down() -> None:
    pool = Executors.thread_pool(2, name="jobs")
    executor = pool.with_timeout(60.0)
    assert repr(executor) == "<TimeoutExecutor name='jobs' <- ThreadPoolExecutor>"

    pool.shutdown()
    assert repr(executor) == (
        "<TimeoutExecutor name='jobs' <- ThreadPoolExecutor (shut down)>"
    )
    executor.shutdown()
    assert repr(executor) == (
        "<TimeoutExecutor name='jobs' (shut down) <- ThreadPoolExecutor>"
    )


def test_every_base_executor_uses_the_same_name_form_and_says_shut_down() -> None:
    for executor in (
        Executors.sync(name="x"),
        Executors.thread_pool(1, name="x"),
        Executors.process_pool(1, name="x"),
    ):
        kind = type(executor).__name__
        assert repr(executor) == f"<{kind} name='x'>"
        executor.shutdown()
        assert repr(executor) == f"<{kind} name='x' (shut down)>"


def test_a_delegate_of_another_library_is_shown_by_its_kind() -> None:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        executor = Executors.with_retry(pool, name="std")
        assert repr(executor) == "<RetryExecutor name='std' <- ThreadPoolExecutor>"
        assert executor.describe().splitlines()[-1] == f"  <- {pool!r}"


def test_describe_shows_each_layer_with_its_parameters() -> None:
    policy = ExceptionRetryPolicy(max_attempts=2)
    executor = (
        Executors.thread_pool(4, name="publisher")
        .with_poll(poll_nothing, default_interval=2.0)
        .with_timeout(600.0)
        .with_retry(policy)
    )
    executor.delegate.shutdown()  # the timeout executor, and the layers inside it

    assert executor.describe() == (
        f"RetryExecutor name='publisher' retry_policy={policy!r}\n"
        "  <- TimeoutExecutor name='publisher' timeout=600.0 (shut down)\n"
        f"  <- PollExecutor name='publisher' poll_fn={poll_nothing!r} "
        "cancel_fn=None default_interval=2.0 (shut down)\n"
        "  <- ThreadPoolExecutor name='publisher' max_workers=4 (shut down)"
    )
    executor.shutdown()


def test_describe_shows_the_queueing_and_mapping_wrappers_parameters() -> None:
    executor = (
        Executors.sync(name="s").with_map(str).with_throttle(2).with_rate_limit(5)
    )

    assert executor.describe() == (
        "RateLimitExecutor name='s' max_calls=5 period=1.0\n"
        "  <- ThrottleExecutor name='s' count=2 block=False\n"
        "  <- MapExecutor name='s' fn=<class 'str'>\n"
        "  <- SyncExecutor name='s'"
    )


def test_a_future_shows_its_state_and_the_name_of_its_executor() -> None:
    with Executors.sync(name="jobs").with_timeout(60.0) as executor:
        future = executor.submit(pow, 2, 3)

    assert repr(future).endswith("state=finished returned int executor='jobs'>")
    assert repr(f_return(1)).endswith("state=finished returned int>")


def test_a_polled_future_names_its_executor_without_keeping_it_alive() -> None:
    executor = Executors.sync(name="remote").with_poll(poll_nothing)
    future = executor.submit(int)
    assert repr(future).endswith("state=pending executor='remote'>")
    gone = weakref.ref(executor)
    future.cancel()
    del executor
    gc.collect()

    assert gone() is None
    assert future.cancelled()
