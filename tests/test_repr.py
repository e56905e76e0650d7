"""Reprs that tell a chain apart in a log line or a debugger (docs/guide.rst)."""

from __future__ import annotations

import gc
import weakref

from fluent_executors import ExceptionRetryPolicy, Executors, f_return


def poll_nothing(descriptors: object) -> None:
    return None


def test_a_chain_shows_each_kind_name_key_parameters_and_delegate() -> None:
    policy = ExceptionRetryPolicy(max_attempts=2)
    executor = (
        Executors.thread_pool(4, name="publisher")
        .with_poll(poll_nothing, default_interval=2.0)
        .with_timeout(600.0)
        .with_retry(policy)
    )
    try:
        text = repr(executor)
    finally:
        executor.shutdown()

    assert text == (
        f"<RetryExecutor name='publisher' retry_policy={policy!r} "
        "delegate=<TimeoutExecutor name='publisher' timeout=600.0 "
        f"delegate=<PollExecutor name='publisher' poll_fn={poll_nothing!r} "
        "cancel_fn=None default_interval=2.0 "
        "delegate=<ThreadPoolExecutor name='publisher' max_workers=4>>>>"
    )


def test_the_queueing_and_mapping_wrappers_show_their_parameters() -> None:
    executor = (
        Executors.sync(name="s").with_map(str).with_throttle(2).with_rate_limit(5)
    )

    assert repr(executor) == (
        "<RateLimitExecutor name='s' max_calls=5 period=1.0 "
        "delegate=<ThrottleExecutor name='s' count=2 block=False "
        "delegate=<MapExecutor name='s' fn=<class 'str'> "
        "delegate=<SyncExecutor name='s'>>>>"
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
