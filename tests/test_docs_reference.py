"""Every public name of ``fluent_executors`` has its entry in the API reference,
docs/api/ (an ``auto*`` or ``py:*`` directive on one of its pages), so that a new
public name cannot be left undocumented."""

from __future__ import annotations

import re
from pathlib import Path

import fluent_executors

API = Path(__file__).resolve().parent.parent / "docs" / "api"
DIRECTIVE = re.compile(
    r"^\.\. (?:auto|py:)?(?:class|function|data|exception)::\s+(\w+)", re.M
)


def test_every_public_name_is_documented_in_the_api_reference() -> None:
    documented = {
        name
        for page in API.glob("*.rst")
        for name in DIRECTIVE.findall(page.read_text())
    }
    assert sorted(set(fluent_executors.__all__) - documented) == []


def test_every_name_of_the_aio_module_is_documented_too() -> None:
    import fluent_executors.aio as aio

    documented = set(DIRECTIVE.findall((API / "aio.rst").read_text()))
    # The names of fluent_executors it exports as well are documented there.
    shared = {
        name
        for name in aio.__all__
        if getattr(fluent_executors, name, None) is getattr(aio, name)
    }
    assert sorted(set(aio.__all__) - documented - shared) == []


def test_no_page_of_the_docs_is_over_6000_words() -> None:
    """A page a reader takes in at one sitting (``wc -w``): a longer one is split,
    as the demo's part of the poll page was (docs/poll-demo.rst)."""
    pages = API.parent.glob("*.rst")
    words = {page.name: len(page.read_text().split()) for page in pages}
    assert {name: n for name, n in words.items() if n > 6000} == {}
