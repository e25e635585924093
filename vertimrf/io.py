"""Atomic file writes: a file is either written whole or not at all."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "wb") -> Iterator[IO]:
    """Open a temporary file next to ``path``; rename it over ``path`` only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    with atomic_open(path, "w") as fh:
        fh.write(text)


def read_json(path: str | os.PathLike, error: type[Exception], what: str) -> Any:
    """Parse the JSON file ``path``; any unreadable, non-UTF-8, invalid or too deeply nested
    file raises ``error`` with a one-line message naming ``what`` and the path."""
    try:
        with open(path, encoding="utf-8-sig") as fh:
            return json.load(fh)
    except OSError as exc:
        raise error(f"{path}: cannot read the {what} ({exc.strerror or exc}).") from None
    except UnicodeDecodeError as exc:
        raise error(
            f"{path}: the {what} is not UTF-8 text ({exc.reason} at byte {exc.start})."
        ) from None
    except RecursionError:
        raise error(f"{path}: the {what} is nested too deeply.") from None
    except ValueError as exc:  # json.JSONDecodeError, or an integer with too many digits
        raise error(f"{path}: the {what} is not valid JSON ({exc}).") from None
