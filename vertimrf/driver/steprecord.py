"""The step record of the secure step commands (``vertimrf party local|features|release|
measure``): each party's private record of the steps it ran in each run (by config hash),
kept between its commands in ``NAME.steps.json``, with the private state of its release
(``NAME.state.vmrf``) beside it. A step that spends budget runs once per run."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from pathlib import Path

from vertimrf.errors import ConfigError, MessageError, PrivacyBudgetError
from vertimrf.io import atomic_write_text, read_json

STEPS_FORMAT = "vertimrf-party-steps/1"


def inputs_digest(deal: str | os.PathLike | None, data: str | os.PathLike) -> str:
    """SHA-256 over the deal (if the command has one) and the data file of a party command."""
    outer = hashlib.sha256()
    for path in (deal, data):
        if path is not None:
            outer.update(bytes.fromhex(file_digest(path)))
    return outer.hexdigest()


def file_digest(path: str | os.PathLike) -> str:
    """SHA-256 of one file."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class StepRecord:
    """A party's private record of its steps in each run (by config hash), kept between its
    commands: ``local`` (the paper pipeline's), ``release`` and ``measure`` run once per run
    (a second one would spend the budget again); ``release`` recomputes the state of
    ``features`` from the very deal and data file it used (others would give shares that do
    not add up, silently) and keeps the shares in the private state file next to the record
    (``state_path``: NAME.state.vmrf, mode 0600, never sent), whose SHA-256 it records, for
    ``measure``."""

    def __init__(
        self,
        path: str | os.PathLike,
        party: str,
        config_hash: str,
        *,
        data: str | os.PathLike,
        deal: str | os.PathLike | None = None,
    ) -> None:
        self.path = Path(path)
        self.party, self.config_hash = party, config_hash
        self._files = (deal, data)
        stem = self.path.name.removesuffix(".json").removesuffix(".steps")
        self.state_path = self.path.with_name(f"{stem}.state.vmrf")

    @functools.cached_property
    def inputs(self) -> str:
        """SHA-256 over the deal and the data file this command was given."""
        return inputs_digest(*self._files)

    def check(self, step: str) -> dict:
        """The record; an error when ``step`` may not run now."""
        data: dict = {"format": STEPS_FORMAT, "party": self.party, "runs": {}}
        if self.path.exists():
            data = read_json(self.path, ConfigError, "step record")
        if not (
            isinstance(data, dict)
            and data.get("format") == STEPS_FORMAT
            and isinstance(data.get("runs"), dict)
        ):
            raise ConfigError(f"{self.path}: not a vertimrf step record; pass your own --ledger.")
        if data.get("party") != self.party:
            raise ConfigError(
                f"{self.path}: the step record of party {data.get('party')!r}, not "
                f"{self.party!r}; pass your own --ledger."
            )
        run = data["runs"].get(self.config_hash, {})
        if step != "features" and step in run:
            raise PrivacyBudgetError(
                f"party {self.party!r} already ran {step!r} in this run (config "
                f"{self.config_hash[:12]}, wrote {run[step].get('out')} at {run[step].get('at')}, "
                f"recorded in {self.path}); a second one would spend the budget again. Make a "
                "new config for a new run."
            )
        if step == "local":  # before features: it makes the bins the features are made of
            return data
        features = run.get("features")
        if step != "features" and features is None:
            raise ConfigError(
                f"{self.path} records no `party features` of this run (config "
                f"{self.config_hash[:12]}): run it first, with the same --ledger."
            )
        if features is not None and features.get("inputs") != self.inputs:
            raise ConfigError(
                "the deal or the data file differs from the one `party features` used in this "
                f"run (recorded in {self.path}): pass the same --deal and --data (a new deal "
                "needs a new config)."
            )
        return data

    def record(self, step: str, out: str, state: str | os.PathLike | None = None) -> None:
        """Mark ``step`` done (checked again: another command may have run meanwhile), with
        the SHA-256 of the private ``state`` file it wrote, if any."""
        data = self.check(step)
        entry: dict[str, object] = {
            "out": str(out),
            "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "inputs": self.inputs,
        }
        if state is not None:
            entry["state"] = {"path": str(self.state_path), "sha256": file_digest(state)}
        data["runs"].setdefault(self.config_hash, {})[step] = entry
        atomic_write_text(self.path, json.dumps(data, indent=1) + "\n")

    def state(self, data: dict) -> Path:
        """The private state file of this run's ``release``, checked against its recorded
        SHA-256 (MessageError when missing, or written by another run or command)."""
        release = data["runs"].get(self.config_hash, {}).get("release")
        if release is None:
            raise ConfigError(
                f"{self.path} records no `party release` of this run (config "
                f"{self.config_hash[:12]}): run it first, with the same --ledger."
            )
        recorded = release.get("state", {}).get("sha256") if isinstance(release, dict) else None
        if not self.state_path.exists():
            raise MessageError(
                f"{self.state_path}: no private state of this party's `party release` (it keeps "
                "the shares that `party measure` needs); run measure with the --ledger that "
                "release used."
            )
        if recorded is None or file_digest(self.state_path) != recorded:
            raise MessageError(
                f"{self.state_path}: this state file is not the one `party release` wrote in "
                f"this run (recorded in {self.path}): another run's, another party's or altered."
            )
        return self.state_path
