"""The transport of a step command: the command's explicit files as
messages; design notes in docs/design/service.md."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType

from vertimrf.driver import codec
from vertimrf.driver.transport import (
    Outgoing,
    Payload,
    file_sha256,
    map_file,
    sha256_hex,
    write_outgoing,
)
from vertimrf.errors import ConfigError, MessageError, MissingMessageError
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.schedule import Kind, Message
from vertimrf.protocol.secure.commit import commit_sender
from vertimrf.protocol.secure.tokens import tokens_sender
from vertimrf.protocol.seeds import SERVER

PathLike = str | os.PathLike


class FileTransport:
    """One step's input and output files.

    Args:
        inputs: each input message's file, or its bytes when the command derived them from
            another file (the noisy count, from the count party's local message).
        outputs: each output message's file; None for a message the command does not write
            (its content travels in another output, e.g. the count in the local message).
        force: replace an output file that holds other bytes.
        limits: the most bytes a message's file may hold, by message (the run's
            :meth:`~vertimrf.protocol.schedule.Schedule.bytes_limit`); unbounded without.

    Used as a context manager: staged outputs not committed are removed on exit.
    """

    def __init__(
        self,
        inputs: Mapping[Message, PathLike | bytes],
        outputs: Mapping[Message, PathLike | None],
        *,
        force: bool = False,
        limits: Callable[[Message], int | None] | None = None,
    ) -> None:
        self.inputs = dict(inputs)
        self.outputs = {m: None if p is None else Path(p) for m, p in outputs.items()}
        self.force, self._limits = force, limits
        self._staged: dict[Path, tuple[Path, str]] = {}  # target: (temporary, digest)

    def __enter__(self) -> FileTransport:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.discard()

    @property
    def targets(self) -> list[Path]:
        """The output files staged so far."""
        return list(self._staged)

    def receive(self, message: Message) -> Payload:
        """The bytes of ``message``'s file (a large one mapped, not read)."""
        source = self.inputs.get(message)
        if source is None:
            raise MissingMessageError(f"this command was given no file for the {message}.")
        if isinstance(source, bytes):
            return source
        try:
            size = os.path.getsize(source)
            limit = None if self._limits is None else self._limits(message)
            if limit is not None and size > limit:
                raise MessageError(
                    f"{source}: {size:,} bytes is more than any {message.kind} of this run "
                    f"({limit:,} bytes)."
                )
            return map_file(Path(source))
        except FileNotFoundError:
            raise MissingMessageError(f"{source}: no such file (the {message}).") from None
        except OSError as exc:
            raise MessageError(f"{source}: cannot read the {message} ({exc.strerror}).") from None

    def send(self, message: Message, data: Outgoing) -> None:
        """Stage ``data`` for ``message``'s output file (once per file: another message to
        the same file must carry the same bytes; a Stored file is copied)."""
        if message not in self.outputs:
            raise ConfigError(f"this command has no output file for the {message}.")
        target = self.outputs[message]
        if target is None:
            return
        digest = sha256_hex(data)
        if target in self._staged:
            if self._staged[target][1] != digest:
                raise MessageError(f"{target}: two messages of this step differ.")
            return
        if target.exists() and not self.force and file_sha256(target) != digest:
            raise MessageError(f"{target} exists with other bytes; give --force to replace it.")
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
        self._staged[target] = (Path(tmp), digest)
        with os.fdopen(fd, "wb") as fh:
            write_outgoing(fh, data)
            fh.flush()
            os.fsync(fh.fileno())

    def flush(self) -> None:
        """Nothing to wait for: ``send`` staged the file (:meth:`commit` renames it)."""

    def commit(self) -> list[Path]:
        """Rename every staged file into place; the files written."""
        written = []
        for target, (tmp, _) in list(self._staged.items()):
            os.replace(tmp, target)
            del self._staged[target]
            written.append(target)
        return written

    def discard(self) -> None:
        """Remove the staged files not committed."""
        for tmp, _ in self._staged.values():
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        self._staged.clear()


def route(
    files: Iterable[PathLike], kind: Kind, config: ProtocolConfig, *, what: str
) -> dict[Message, Path]:
    """The files of the parties' ``kind`` messages to the server (``commit``: data
    commitments; ``tokens``: token lists; ``local``: local messages; else secure
    releases), each named by the sender its content names; two files of one party are
    refused (``what`` names the files in the message)."""
    read: Callable[[bytes], str]
    if kind == Kind.COMMIT:
        read = lambda data: commit_sender(data, config.config_hash())  # noqa: E731
    elif kind == Kind.TOKENS:
        read = lambda data: tokens_sender(data, config.config_hash())  # noqa: E731
    elif kind == Kind.LOCAL:
        read = lambda data: codec.read_message(data, config).party  # noqa: E731
    else:
        plan = secure_plan(config)
        read = lambda data: codec.read_release(data, plan).party  # noqa: E731
    routed: dict[Message, Path] = {}
    for path in map(Path, files):
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise MessageError(f"{path}: cannot read the {what} ({exc.strerror}).") from None
        try:
            sender = read(data)
        except MessageError as exc:
            raise MessageError(f"{path}: {exc}") from None
        message = Message(sender, SERVER, kind)
        if message in routed:
            raise ConfigError(
                f"two {what} from party {message.sender} ({routed[message]} and {path}); give "
                f"each party's {what.removesuffix('s')} once."
            )
        routed[message] = path
    return routed


def count_input(
    party: str, count_from: PathLike | None, config: ProtocolConfig
) -> dict[Message, bytes]:
    """The count message ``party``'s local release needs, taken from the count party's own
    local message (``count_from``); none for the count party itself."""
    count = config.count_party
    if count_from is None:
        if party == count:
            return {}
        raise ConfigError(
            f"party {party!r} needs the noisy count of the count party {count!r}: give "
            f"--count-from with {count!r}'s message."
        )
    try:
        message = codec.read_message(Path(count_from).read_bytes(), config)
    except MessageError as exc:
        raise MessageError(f"{count_from}: {exc}") from None
    if party == count:
        raise ConfigError(f"{count_from}: {party!r} is the count party; give it no --count-from.")
    if message.noisy_count is None:
        raise ConfigError(
            f"{count_from} holds no noisy count: pass the message of the count party {count!r}."
        )
    data = codec.count_bytes(message.noisy_count, config.config_hash())
    return {Message(count, party, Kind.LOCAL_COUNT): data}
