"""File safety: atomic writes (a file is written whole or not at all), JSON reading, the
checks a command makes on its outputs before it does any work, and scratch folders."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import weakref
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from vertimrf.errors import ConfigError

PathLike = str | os.PathLike
# Files no command overwrites, even with --force (see protected_kind).
PROTECTED_SUFFIXES = {
    ".key": "private key",
    ".secret": "group secret",
    ".state.vmrf": "private state file",
    ".steps.json": "step record",
}
# Names no command writes, even with --force: SQLite databases (the server's and the
# service's run state) and the files SQLite keeps beside one.
SQLITE_SUFFIXES = (".sqlite", ".sqlite-wal", ".sqlite-shm", ".sqlite-journal")
_SQLITE_HEADER = b"SQLite format 3\x00"
# The file every role's state folder holds (written when the folder is made), so that any
# command can tell a state folder, its own or another role's, and write nothing inside it.
STATE_MARKER = ".vertimrf-state"
# What a state folder made before the marker holds (the party's step record is checked by
# its content: the name alone is common).
_STATE_FILES = ("server.sqlite", "messages.sqlite")
_PARTY_RECORD = "steps.json"
_SECRET_BYTES = 4096  # a hex secret file is small
_JSON_BYTES = 64 << 20  # larger JSON files are not sniffed (configs are far smaller)
_MANIFEST_BYTES = 1 << 22


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "wb", *, sync: bool = True) -> Iterator[IO]:
    """Open a temporary file next to ``path``; rename it over ``path`` only on success
    (flushed to the disk first, unless ``sync`` is False: for a copy that can be had again)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(fd, mode, encoding=encoding) as fh:
            yield fh
            fh.flush()
            if sync:
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


def refuse_existing(path: str | os.PathLike, overwrite: bool) -> None:
    """ConfigError if ``path`` exists and ``overwrite`` is False (a library call's check
    before it writes a file)."""
    if not overwrite and os.path.lexists(path):
        raise ConfigError(f"{path} exists; give a new path, or overwrite=True to replace it.")


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


def mark_state_folder(folder: PathLike, role: str) -> None:
    """Mark ``folder`` as ``role``'s private state (once): no command writes inside it."""
    marker = Path(folder) / STATE_MARKER
    if not marker.exists():
        atomic_write_text(
            marker, f"the private state of vertimrf's {role}: no command writes in this folder\n"
        )


def state_folder(path: PathLike, states: Iterable[PathLike] = ()) -> Path | None:
    """The private state folder that holds ``path`` (after :func:`os.path.realpath`), else
    None: one of ``states``, or a folder above ``path`` that holds the state marker (or, made
    before it, a server's or service's database or a party's step record)."""
    real = Path(os.path.realpath(path))
    for state in states:
        folder = Path(os.path.realpath(state))
        if real.is_relative_to(folder):
            return folder
    for folder in real.parents:
        if any((folder / name).exists() for name in (STATE_MARKER, *_STATE_FILES)):
            return folder
        record = folder / _PARTY_RECORD
        if record.is_file() and _json_kind(record) is not None:
            return folder
    return None


def protected_kind(path: PathLike) -> str | None:
    """What the existing file ``path`` holds if no command may overwrite it, even with
    ``--force``; None for any other file.

    The rule, by name or by content (so a renamed file is still recognised):

    * its name ends in ``.key``, ``.secret``, ``.state.vmrf`` or ``.steps.json``;
    * a SQLite database (a role's run state), by its name or its header;
    * a group secret: a small file of only hex digits, at least 64 of them;
    * a key or a step record: a JSON object whose ``"format"`` starts with ``vertimrf-``
      (key pairs, public keys and party step records carry one);
    * a protocol config: a JSON object with ``"spec"``, ``"parties"`` and ``"run_nonce"``;
    * private state: a vertimrf container (zip) whose kind ends in ``-state``.
    """
    name = Path(path).name
    for suffix, kind in PROTECTED_SUFFIXES.items():
        if name.endswith(suffix):
            return kind
    if name.endswith(SQLITE_SUFFIXES):
        return "SQLite database"
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(_SECRET_BYTES + 1)
    except OSError:
        return None
    text = head.strip()
    if (
        size <= _SECRET_BYTES
        and len(text) >= 64
        and all(c in b"0123456789abcdefABCDEF" for c in text)
    ):
        return "group secret"
    if head.startswith(_SQLITE_HEADER):
        return "SQLite database"
    if head.startswith(b"PK\x03\x04"):
        return _container_kind(path)
    if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{") and size <= _JSON_BYTES:
        return _json_kind(path)
    return None


def _json_kind(path: PathLike) -> str | None:
    """The kind of a vertimrf JSON record or protocol config, else None."""
    try:
        with open(path, encoding="utf-8-sig") as fh:
            data = json.load(fh)
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    fmt = data.get("format")
    if isinstance(fmt, str) and fmt.startswith("vertimrf-"):
        if "keypair" in fmt:
            return "private key"
        return "public key" if "public" in fmt else f"vertimrf record ({fmt})"
    if {"spec", "parties", "run_nonce"} <= set(data):
        return "protocol config"
    return None


def _container_kind(path: PathLike) -> str | None:
    """``private state file`` for a vertimrf container of a state kind, else None."""
    try:
        with zipfile.ZipFile(path) as zf:
            info = zf.getinfo("manifest.json")
            if info.file_size > _MANIFEST_BYTES:
                return None
            manifest = json.loads(zf.read(info))
    except (OSError, KeyError, ValueError, RuntimeError, EOFError, zipfile.BadZipFile):
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != "vertimrf-container":
        return None
    return "private state file" if str(manifest.get("kind")).endswith("-state") else None


def check_outputs(
    outputs: Iterable[PathLike],
    inputs: Iterable[PathLike] = (),
    *,
    force: bool = False,
    records: Iterable[PathLike] = (),
    states: Iterable[PathLike] = (),
    make_dirs: bool = False,
) -> None:
    """Refuse, before a command does any work, every output that would lose a file.

    Paths are compared after :func:`os.path.realpath` (a symlink, ``./x`` and ``x`` are one
    file). ``records`` are files the command updates in place (a party's step record): they
    may exist, but like the outputs they must not be an input or another output. Refused
    with a one-line :class:`ConfigError`: two outputs that are one file; an output that is
    one of ``inputs`` (even with ``force``); an output inside a role's private state folder
    (:func:`state_folder`: one of ``states``, or one that holds the state marker) or named as
    a SQLite file (even with ``force``); an existing file :func:`protected_kind` names (even
    with ``force``); any other existing file without ``force``; a folder in place of an
    output file; an output folder that does not exist or is not writable. With
    ``make_dirs`` a missing folder is fine when its nearest existing parent is writable (the
    command creates it).
    """
    outs = [Path(p) for p in outputs]
    files = [*outs, *(Path(p) for p in records)]
    given = {os.path.realpath(p): Path(p) for p in inputs}
    seen: dict[str, Path] = {}
    for path in files:
        real = os.path.realpath(path)
        if real in seen:
            raise ConfigError(
                f"{seen[real]} and {path} are one file, and both are outputs of this command; "
                "give each its own path."
            )
        seen[real] = path
        if real in given:
            raise ConfigError(
                f"{path}: refusing to overwrite {given[real]}, an input of this command (even "
                "with --force); choose another output path."
            )
    states = list(states)
    for path in outs:
        folder = state_folder(path, states)
        if folder is not None:
            raise ConfigError(
                f"{path}: refusing to write inside {folder}, a private state folder (never, "
                "even with --force); choose an output path outside it."
            )
        if any(Path(p).name.endswith(SQLITE_SUFFIXES) for p in (path, os.path.realpath(path))):
            raise ConfigError(
                f"{path}: refusing to write a SQLite file, a role's private state (never, even "
                "with --force); choose another output path."
            )
        if os.path.isdir(path):
            raise ConfigError(f"{path}: is a folder; give a file name for the output.")
        if not os.path.lexists(path):
            continue
        kind = protected_kind(path)
        if kind is not None:
            raise ConfigError(
                f"{path}: refusing to overwrite a {kind} (never overwritten, even with "
                "--force); move it away or choose another output path."
            )
        if not force:
            raise ConfigError(
                f"{path}: refusing to overwrite an existing file; give --force to replace it, "
                "or choose another output path."
            )
    for folder in dict.fromkeys(p.parent for p in files):
        _check_folder(folder, make_dirs)


def _check_folder(folder: Path, make_dirs: bool) -> None:
    """A ConfigError unless files can be written in ``folder`` (or, with ``make_dirs``, in
    the nearest existing folder above it, where the command creates it)."""
    probe = folder
    while make_dirs and not os.path.lexists(probe) and probe != probe.parent:
        probe = probe.parent
    if not os.path.exists(probe):
        raise ConfigError(
            f"{folder}: the output folder does not exist; create it first or choose another."
        )
    if not os.path.isdir(probe):
        raise ConfigError(f"{probe}: is not a folder; choose another output path.")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(
            f"{probe}: the output folder is not writable; choose another or change its permissions."
        )


def read_hex_secret(path: str | os.PathLike) -> bytes:
    """A secret kept as hex text in ``path`` (``vertimrf secret``); ConfigError naming the
    file when it cannot be read or is not hex."""
    try:
        with open(path, encoding="ascii") as fh:
            return bytes.fromhex(fh.read().strip())
    except OSError as exc:
        raise ConfigError(f"cannot read the secret file {path}: {exc.strerror}.") from None
    except ValueError:
        raise ConfigError(f"{path}: not a hex secret (make one with `vertimrf secret`).") from None


class ScratchFolder:
    """A fresh private temporary folder (``name``), removed by :meth:`cleanup`, or when
    this object is collected, or at exit: TemporaryDirectory's lifetime without its
    ResourceWarning, for folders that by design live as long as the object holding them."""

    def __init__(self, prefix: str, dir: PathLike | None = None) -> None:  # noqa: A002
        self.name = tempfile.mkdtemp(prefix=prefix, dir=dir)
        self._remove = weakref.finalize(self, shutil.rmtree, self.name, True)

    def cleanup(self) -> None:
        """Remove the folder now."""
        self._remove()
