"""Fixtures for every test: the cost markers are kept (a test that starts the HTTPS service
is marked ``service``, so that the fast subset ``-m "not slow and not service"`` starts none).
Shared helpers are public names in the helper modules beside the test folders
(``helpers``, ``runs``, ``folder_roles``, ``https_roles``, ``step_roles``, ``secure_runs``,
``zip_bombs``) and ``naive`` (the plain references). Every session first runs the kernels'
paths once (``warm_up``), so that no test pays Numba's compile. The longest tests start
first (:data:`FIRST`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import https_roles
from tests.runs import reap_started
from tests.warm_up import warm_up

# The modules of the longest tests (a fresh venv's install, the README's main job, the
# walkthrough and the docs' examples: 1-5 min each on 2 cores). They come last in the
# collection's order, so under xdist they would end the run alone; they start first.
FIRST = (
    "tests/test_examples.py",
    "tests/test_readme.py",
    "tests/test_walkthrough.py",
    "tests/test_doc_examples.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests of :data:`FIRST` first, in their order; the others as collected."""
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in FIRST)


@pytest.fixture(scope="session", autouse=True)
def _kernels_ready() -> None:
    """Numba's compile, or its cache load, once before the first test (:mod:`tests.warm_up`)."""
    warm_up()


@pytest.fixture(autouse=True)
def _service_marker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Let the test start the HTTPS service only if it is marked ``service``."""
    marked = request.node.get_closest_marker("service") is not None
    monkeypatch.setattr(https_roles, "SERVICE_MARKED", marked)


@pytest.fixture(autouse=True)
def _processes_reaped() -> Iterator[None]:
    """Every process the test started ends with it, its pipes closed (:mod:`tests.runs`)."""
    yield
    reap_started()
