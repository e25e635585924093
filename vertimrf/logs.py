"""The library's logger and progress bars; design notes in docs/design/core.md."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Iterator
from typing import Protocol, TypeVar, overload

__all__ = ["LOGGER_NAME", "ProgressBar", "progress_bar", "show_progress"]

LOGGER_NAME = "vertimrf"
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class ProgressBar(Protocol[T_co]):
    """What the library uses of a progress bar (a tqdm bar): iterate, advance, label, close."""

    def __iter__(self) -> Iterator[T_co]:
        """The wrapped iterable's items, advancing the bar."""
        ...

    def update(self, n: float | None = 1) -> bool | None:
        """Advance the bar by ``n`` steps."""
        ...

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        """Show ``s`` after the bar."""
        ...

    def close(self) -> None:
        """Remove the bar."""
        ...


def show_progress(progress: bool | None) -> bool:
    """Whether to draw a progress bar: ``progress`` itself, or for ``None`` whether stderr is
    a terminal.

    >>> show_progress(True), show_progress(False)
    (True, False)
    """
    if progress is None:
        isatty = getattr(sys.stderr, "isatty", None)
        return bool(isatty is not None and isatty())
    return bool(progress)


@overload
def progress_bar(
    iterable: Iterable[T], *, desc: str, total: int | None = None, progress: bool | None = None
) -> ProgressBar[T]: ...


@overload
def progress_bar(
    iterable: None = None, *, desc: str, total: int | None = None, progress: bool | None = None
) -> ProgressBar[object]: ...


def progress_bar(
    iterable: Iterable[T] | None = None,
    *,
    desc: str,
    total: int | None = None,
    progress: bool | None = None,
) -> ProgressBar[T] | ProgressBar[object]:
    """A tqdm bar on stderr, disabled unless :func:`show_progress` says to draw it."""
    from tqdm.auto import tqdm

    return tqdm(
        iterable,
        total=total,
        desc=desc,
        leave=False,
        file=sys.stderr,
        disable=not show_progress(progress),
    )


logging.getLogger(LOGGER_NAME).addHandler(logging.NullHandler())
