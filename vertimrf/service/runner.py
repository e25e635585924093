"""The server's run inside the service: the ServerDriver over the message store,
in a thread; design notes in docs/design/service.md."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vertimrf.crypto.keys import KeyPair
from vertimrf.driver.role import failure_report
from vertimrf.driver.schedule import observed_seconds, sent_bytes, waiting_on
from vertimrf.driver.server import ServerDriver
from vertimrf.errors import RunFailedError, VertimrfError
from vertimrf.io import atomic_write_text
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.schedule import Message
from vertimrf.protocol.seeds import SERVER
from vertimrf.protocol.setup import RunSetup, run_setup
from vertimrf.service.store import MessageStore, StoreTransport
from vertimrf.synth.table_file import table_format

log = logging.getLogger(__name__)

SYNTHETIC = "synthetic"  # .csv, or .parquet when ``out`` is a Parquet file
REPORT = "report.json"


def _by_message(rows: list[dict[str, Any]], field: str) -> dict[Message, Any]:
    """The ``field`` of each message of the store's ``rows``, by message."""
    return {Message(r["sender"], r["receiver"], r["kind"]): r[field] for r in rows}


def _unseen(row: dict[str, Any]) -> dict[str, Any]:
    """What the status shows of a message to a role that neither sent nor receives it."""
    return {key: row[key] for key in ("sender", "kind", "bytes")}


class ServiceRun:
    """The server's run of ``config`` over ``store``, its state in ``state_dir``."""

    def __init__(
        self,
        config: ProtocolConfig | RunSetup,
        keypair: KeyPair,
        store: MessageStore,
        state_dir: str | os.PathLike,
        *,
        party_timeout: float,
        seed: int | None = None,
        out: str | os.PathLike | None = None,
        report: str | os.PathLike | None = None,
        announce: Callable[[str], object] = log.info,
    ) -> None:
        self.setup = run_setup(config)  # checked once, for its server driver
        self.config, self.keypair, self.store = self.setup.config, keypair, store
        self.announce = announce  # says, once done, where the table and report are
        self.state_dir = Path(state_dir)
        self.party_timeout, self.seed = party_timeout, seed
        self.out = None if out is None else Path(out)
        fmt = "csv" if out is None else table_format(out)
        self.synthetic = self.state_dir / f"{SYNTHETIC}.{fmt}"
        self.report = None if report is None else Path(report)
        self.state, self.error = "waiting", ""
        self.phases = self.setup.schedule.phases()
        self.finished = threading.Event()
        self.told: set[str] = set()  # the parties told that the run failed
        self._failing = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="vertimrf-server-run", daemon=True)

    def start(self) -> None:
        """Run the server's steps in the worker thread."""
        self._thread.start()

    def working(self) -> bool:
        """True while the worker thread runs the server's steps."""
        return self._thread.is_alive()

    def outputs(self) -> dict[str, list[str]]:
        """The absolute paths of the synthetic table and of the report, each in the state
        folder and where it is copied to."""
        tables = [self.synthetic, *([self.out] if self.out else [])]
        reports = [self.state_dir / REPORT, *([self.report] if self.report else [])]
        return {
            "synthetic": [str(p.absolute()) for p in tables],
            "report": [str(p.absolute()) for p in reports],
        }

    def status(self, role: str) -> dict[str, Any]:
        """The run's state, what it waits for (while it runs) or its outputs (once done),
        every message held and each party's last step and bytes, as ``role`` may see them:
        a message it neither sent nor receives shows only its sender, kind and bytes (no
        digest to test a guess of it against, no time)."""
        state, rows = self.state, self.store.rows()
        waiting = None
        if state in ("waiting", "running"):
            step, roles = waiting_on(self.phases, set(_by_message(rows, "kind")))
            waiting = {"step": step, "roles": roles}
        parties: dict[str, dict[str, Any]] = {
            p.name: {"last": None, "sent_bytes": 0, "messages": 0} for p in self.config.parties
        }
        for row in rows:
            entry = parties.get(row["sender"])
            if entry is not None:
                entry["last"] = row["kind"]
                entry["sent_bytes"] += row["bytes"]
                entry["messages"] += 1
        return {
            "run": self.config.config_hash(),
            "state": state,
            "error": self.error,
            "waiting": waiting,
            "outputs": self.outputs() if state == "done" else None,
            "parties": parties,
            "messages": [
                row if role in (row["sender"], row["receiver"]) else _unseen(row) for row in rows
            ],
        }

    def fail(self, error: str, party: str | None = None) -> None:
        """End the run as failed with ``error`` (``party``'s own failure, if named), unless
        it has ended already; the server's steps stop at their next wait."""
        with self._failing:
            if self.state in ("done", "failed"):
                return
            self.state = "failed"
            self.error = error if party is None else f"party {party} failed: {error}"
            if party is not None:
                self.told.add(party)
        log.error("the run failed: %s", self.error)
        self.finished.set()

    def failure(self, party: str) -> str | None:
        """Why the run failed (``party`` is then counted as told), or None."""
        if self.state != "failed":
            return None
        self.told.add(party)
        return self.error

    def check(self) -> None:
        """RunFailedError once the run has failed (the server's steps call it as they
        wait)."""
        if self.state == "failed":
            raise RunFailedError(self.error)

    def _run(self) -> None:
        try:
            self.state = "running"
            if not self.synthetic.exists():
                self._fit()
            self._copy(self.synthetic, self.out)
            self._copy(self.state_dir / REPORT, self.report)
            self.state = "done"
            log.info("the run is done.")
            paths = self.outputs()
            self.announce(
                f"the synthetic table is in {' and '.join(paths['synthetic'])}; the report is "
                f"in {' and '.join(paths['report'])}"
            )
        except RunFailedError:
            pass  # failed by a party: told already
        except VertimrfError as exc:
            self.fail(str(exc))
        except Exception as exc:  # a bug: the service reports it and stops
            log.exception("internal error")
            self.fail(f"internal error: {exc!r}")
        finally:
            self.finished.set()

    def _fit(self) -> None:
        names = [p.name for p in self.config.parties]
        driver = ServerDriver(
            self.setup, StoreTransport(self.store, self.party_timeout, names, self.check),
            keypair=self.keypair, seed=self.seed, progress=False, state_dir=self.state_dir,
        )  # fmt: skip
        try:
            try:
                driver.run()
            except RunFailedError:
                raise
            except VertimrfError as exc:  # one line naming the server's step (a bug in a
                # step is a StepError already, by the driver)
                raise VertimrfError(
                    f"the server, {failure_report(SERVER, driver.step, exc)}"
                ) from None
            rows = self.store.rows()
            model = driver.fitted(
                seconds={**observed_seconds(self.phases, _by_message(rows, "time")),
                         **driver.timed()},
                message_bytes=sent_bytes(self.config, _by_message(rows, "bytes")),
            )  # fmt: skip
            # the table is renamed into place last: a state folder holding it holds the report
            partial = self.synthetic.with_name(f".partial-{self.synthetic.name}")
            start = time.perf_counter()
            model.write_sample(partial, overwrite=True)
            seconds = {**model.report.seconds, "sample": time.perf_counter() - start}
            report = dataclasses.replace(model.report, seconds=seconds).to_dict()
            atomic_write_text(self.state_dir / REPORT, json.dumps(report, indent=2) + "\n")
            os.replace(partial, self.synthetic)
        finally:
            if driver.state is not None:
                driver.state.close()

    @staticmethod
    def _copy(source: Path, target: Path | None) -> None:
        if target is not None and not target.exists():
            shutil.copyfile(source, target)
