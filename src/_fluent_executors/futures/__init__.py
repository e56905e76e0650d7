"""The future combinators of :mod:`fluent_executors.futures` (their public module),
by family: ``transforming`` one future, ``combining`` many, ``timing`` (time and
cancellation); ``checks``, the argument checks they share."""
