"""A party's own state in a secure run: its setup, its aligned records, the digests of
its inputs, and the private state file between processes.

:meth:`PartyState.save_state` writes what ``measure`` needs, each pair's share (k_p x k_q
words) and the record-set digest, to a private file (the container format, atomic, mode
0600; never sent) bound to the run, the party, its data and its deal, and
:meth:`PartyState.load_state` reads it back, so ``measure`` neither opens the deal again nor
reads the peers' blobs. A state of another run, party, data set or deal is refused.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from vertimrf.container import read_container, write_container
from vertimrf.crypto.keys import KeyPair, PublicKey, pairwise_key
from vertimrf.crypto.schedule import derive, mac
from vertimrf.domain import DomainSpec, EncodedTable
from vertimrf.errors import RUN_CHANGED, ConfigError, MessageError, PrivacyBudgetError
from vertimrf.party.aligned import Aligned, AlignedTable, HeldTable, PartialRecords
from vertimrf.party.fine import fine_spec, frame_counts, grid_spec, measured_cuts, one_way_fine
from vertimrf.party.ids import RecordIds, record_fingerprints
from vertimrf.party.kept_aligned import (
    KeptRecords,
    binding,
    keep_records,
    kept_or_aligned,
    load_records,
)
from vertimrf.party.keys import HashKeys
from vertimrf.party.party import bin_table, own_table, sha256_parts, table_digest
from vertimrf.party.slot_table import MemoryRecords
from vertimrf.party.tokens import TokenKeys, checked_dummies, merged_tokens, release_tokens
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.samplers import KeyedSampler, randomness
from vertimrf.protocol.bins import BinMap
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.secure.commit import Admit
from vertimrf.protocol.secure.plan import SELECT
from vertimrf.protocol.secure.tokens import TokenSeal
from vertimrf.protocol.seeds import SERVER, role_seed

STATE_KIND = "vertimrf-secure-party-state"

# A peer's feature blob: any bytes-like (the command line maps each file read-only).
Blob = bytes | bytearray | memoryview


class PartyState:
    """A data holder's state in a secure run: what every step of
    :class:`~vertimrf.party.secure.SecureParty` reads.

    Args:
        name, data, config, secret, id_column, ids, seed: as for
            :class:`vertimrf.party.party.LocalParty` (``config.method`` must be "secure");
            ``data`` may also be a table aligned where it is held (the select pipeline only):
            a :class:`vertimrf.party.file_table.FileTable`, a CSV or Parquet file aligned
            through temporary files, or a :class:`vertimrf.party.dask_table.DaskTable`, a
            table on this party's Dask cluster.
        keypair: this party's X25519 key pair (``vertimrf keys``).
        peers: every other party's public key, by name (fingerprints checked out of band).
        bins: the paper pipeline only: the bin maps
            of this party's binned columns, from its own local message
            (:meth:`vertimrf.party.party.LocalParty.release`); its features are the binned codes.
    """

    def __init__(
        self,
        name: str,
        data: pd.DataFrame | EncodedTable | HeldTable,
        config: ProtocolConfig,
        secret: bytes,
        keypair: KeyPair,
        peers: Mapping[str, PublicKey],
        *,
        id_column: str = "id",
        ids: RecordIds | None = None,
        seed: int | None = None,
        bins: Mapping[str, BinMap] | None = None,
    ) -> None:
        if not isinstance(config, ProtocolConfig):
            raise ConfigError(f"config must be a ProtocolConfig; got {type(config).__name__}.")
        self.plan = secure_plan(config)
        self.name, self.config = name, config
        self.index = self.plan.party_index(name)
        if keypair.name != name:
            raise ConfigError(f"the key pair is {keypair.name!r}'s, not {name!r}'s.")
        missing = sorted(set(self.plan.names) - {name} - set(peers))
        if missing:
            raise ConfigError(f"party {name!r} needs the public keys of {missing}.")
        # The party's columns in the spec's order, the plan's order of its attributes
        # (the config may list them in another).
        own = set(config.party(name).columns)
        self.spec = config.spec.subset([c for c in config.spec.names if c in own])
        self._seed = seed
        self._local = keypair.local_secret()
        self.ledger = PrivacyLedger(rho=self.plan.rho + self.plan.numeric_rho, delta=config.delta)
        if not all(c.resolved for c in self.spec.columns):
            self.spec = self._cut(data, id_column)
        self._table: EncodedTable | HeldTable | None
        self._fingerprints: np.ndarray | None = None
        if isinstance(data, HeldTable):
            if not self.plan.select or bins is not None:
                raise ConfigError(
                    f"a {type(data).__name__} runs the select pipeline only "
                    "(secure_pipeline='select')."
                )
            self._table = data.check(name, self.spec, id_column, config.id_type)
        else:
            self._table, ids = own_table(name, self.spec, data, id_column, ids)
            if not self.plan.select:
                self._table = bin_table(self._table, self._check_bins(bins))
            elif bins is not None:
                raise ConfigError(
                    "bins are an input of the paper pipeline (secure_pipeline='paper')."
                )
            typed = config.id_type if isinstance(data, pd.DataFrame) else ""  # not fingerprints
            self._fingerprints = record_fingerprints(ids, typed, id_column)
        fine = [r.params["column"] for r in self.plan.fine_releases(name)]
        self._fine_spec = fine_spec(self.spec, fine) if fine else None
        self._fine: dict[str, np.ndarray] | None = None if fine else {}  # the exact counts
        # a frame is counted now (it is not kept); a table held elsewhere when measured
        self._fine_table = data if fine and isinstance(data, HeldTable) else None
        if self._fine_spec is not None and isinstance(data, pd.DataFrame):
            self._fine = one_way_fine(self._fine_spec, frame_counts(data, self._fine_spec))
        elif fine and not isinstance(data, HeldTable):
            raise ConfigError(
                f"party {name!r}: a table given as codes holds no values to place inside their "
                "bins: give the DataFrame, or set values 'uniform' (secure_values='uniform')."
            )
        self._aligned: Aligned | None = None
        self._partial: PartialRecords | None = None
        self._keep: Path | None = None
        self._id_column = id_column
        self._offsets = np.asarray(self.plan.offsets[self.index], np.int64)
        HashKeys.from_secret(secret, 1)
        self._secret, self._keypair = secret, keypair
        self._context = config.run_context()
        self._keys = {
            q: pairwise_key(keypair, peers[q], self._context) for q in self.plan.names if q != name
        }
        self._state: dict[str, Any] = {}

    def _check_bins(self, bins: Mapping[str, BinMap] | None) -> Mapping[str, BinMap]:
        """The bin maps of exactly this party's binned columns, each with the plan's size."""
        binned = set(self.config.binned_columns())
        want = sorted(c for c in self.spec.names if c in binned)
        got = {} if bins is None else dict(bins)
        if sorted(got) != want:
            raise ConfigError(
                f"party {self.name!r} needs the bin maps of {want} (from its local release); "
                f"got {sorted(got)}."
            )
        for c, m in got.items():
            if m.n_bins != self.plan.sizes[self.config.spec.names.index(c)]:
                raise ConfigError(f"the bin map of {c!r} has {m.n_bins} bins, not the plan's.")
        return got

    def _cut(self, data: pd.DataFrame | EncodedTable | HeldTable, id_column: str) -> DomainSpec:
        """This party's spec with the DP quantile cuts of its columns cut at quantiles,
        drawn from the counts of its values on their candidate grids (charged before their
        draw), from a keyed stream bound to the run, this party and those counts: every
        process of the run draws the same cuts and encodes its table with them."""
        rhos = self.plan.quantile_columns(self.index)
        grid = grid_spec(self.spec, list(rhos)) if rhos else None
        if grid is None:
            counts: list[np.ndarray] = []
        elif isinstance(data, pd.DataFrame):
            counts = frame_counts(data, grid)
        elif isinstance(data, HeldTable):
            counts = data.check(self.name, grid, id_column, self.config.id_type).one_way(grid)
        else:
            raise ConfigError(
                f"party {self.name!r}: a table given as codes holds no values to cut at "
                "quantiles: give the DataFrame, or the column's cut points (scale 'cuts')."
            )
        by_column = dict(zip(list(rhos), counts, strict=True))
        if self._seed is not None:
            noise = randomness(role_seed(self._seed, f"{self.name}/quantile"))[0]
        else:
            digest = sha256_parts(*(np.ascontiguousarray(n, "<i8").tobytes() for n in counts))
            bound = (self.config.config_hash(), self.name, "quantile", digest)
            noise = KeyedSampler(self._local, "party-quantile", *bound)
        return measured_cuts(
            self.spec, by_column, rhos, noise=noise, ledger=self.ledger, party=self.name
        )

    def exact_fine(self) -> dict[str, np.ndarray]:
        """The exact fine histograms of this party's columns the plan releases them of
        (:mod:`vertimrf.party.fine`), counted once where the table is held."""
        if self._fine is None:
            assert self._fine_table is not None and self._fine_spec is not None
            counts = self._fine_table.one_way(self._fine_spec)
            self._fine = one_way_fine(self._fine_spec, counts)
        return self._fine

    def keep_aligned(self, folder: str | os.PathLike) -> None:
        """Keep this party's aligned records in ``folder`` (its private state for the run),
        so that a later process of the run reads them back instead of aligning the table
        again (:mod:`vertimrf.party.kept_aligned`; a table held outside memory keeps them
        its own way, :meth:`HeldTable.keep`)."""
        if isinstance(self._table, HeldTable):
            self._table.keep(Path(folder))
        self._keep = Path(folder)

    def tokens(self, admit: bytes) -> np.ndarray:
        """Partial record sets: this party's sorted token list for the server (its records'
        tokens and its dummies, :mod:`vertimrf.party.tokens`), keyed by the ``admit``
        digest (the server's :meth:`~vertimrf.server.secure.SecureServer.admit`)."""
        _, blocks = self.token_list(admit)
        return np.concatenate([np.empty(0, np.uint64), *blocks()])

    def token_list(self, admit: bytes) -> tuple[int, Callable[[], Iterator[np.ndarray]]]:
        """Partial record sets: the length of this party's token list for ``admit`` and a
        function giving the list (:meth:`tokens`) by sorted blocks, so that a table held in
        a file is never whole in memory; from the sorted tokens kept at the commitment when
        an earlier process of the run kept them (no table read)."""
        kept = self._kept_records() if self._partial is None else None
        if kept is None:
            return self._partial_records().tokens(admit)
        assert self.plan.regions is not None  # a kept record: a plan of partial record sets
        keys = self._token_keys()
        real = [np.sort(release_tokens(kept.tokens, keys, admit))]
        dummies = checked_dummies(real, keys, admit, self.plan.regions, self.index)
        return real[0].size + dummies.size, lambda: merged_tokens(lambda: iter(real), dummies)

    def token_seal(self, admit: Admit) -> TokenSeal:
        """How this party seals its tokens message for ``admit``: to the server's key the
        admit names (MessageError when the config pins another), under a key, nonce and
        sealing randomness of its own secret bound to the run and the admit digest, so no
        peer can recompute the message or its digest."""
        pinned = self.config.public_keys().get(SERVER) if self.config.identities else None
        if pinned is not None and pinned.raw != admit.server:
            raise MessageError(
                "the admit message names a server key other than the one this run's config "
                "pins: take the admit from this run's server."
            )
        bound = (self.config.config_hash(), self.name, admit.digest, admit.server)

        def derived(what: str) -> bytes:
            return derive(self._local, "tokens-seal", *bound, what)

        server = PublicKey(SERVER, admit.server)
        return TokenSeal(server, derived("key"), derived("nonce")[:12], derived("seal"))

    def _token_keys(self) -> TokenKeys:
        """What this party's tokens are keyed by: the group secret, its local secret and
        the run."""
        return TokenKeys(self._secret, self._local, self._context)

    def _partial_records(self) -> PartialRecords:
        """This party's records before the deal lays them out, sorted by token (made once
        per process: the commitment, the tokens, then the deal)."""
        if self.plan.regions is None:
            raise ConfigError("tokens are a step of record_sets='partial' only.")
        if self._partial is None:
            table = self._table
            if table is None:
                raise ConfigError("the tokens are made before the deal lays the records out.")
            if isinstance(table, HeldTable):
                self._partial = table.partial_records(
                    self.spec, self._token_keys(), self.plan, self.index
                )
            else:
                assert self._fingerprints is not None  # with the table in memory
                self._partial = MemoryRecords(
                    table, self._fingerprints, self._token_keys(), self.plan, self.index
                )
        return self._partial

    def lay_out(
        self,
        slots: Callable[[], Iterable[np.ndarray]],
        count: int,
        admit: bytes,
        assignment: bytes,
    ) -> None:
        """Partial record sets: lay this party's records out at the ``count`` slots its
        deal gave its token list (made with ``admit``) in the assignment of digest
        ``assignment``; ``slots()`` gives them by blocks, called only when the layout is
        not kept from an earlier process."""
        if self._aligned is not None:
            return
        self._records_digest()  # kept: the records are dropped once laid out

        def lay_out() -> Aligned:
            return self._partial_records().lay_out(slots(), count, admit, assignment)

        bound = self._partial_binding()
        if bound is None:
            self._aligned = lay_out()
        else:  # a later process of the run reads the layout back: no table read, no sort
            laid = binding(self._secret, self._context, bound, admit.hex(), assignment.hex())
            self._aligned = kept_or_aligned(
                self._kept_partial(), laid, self.spec, self.plan.rows, lay_out
            )
        self._partial = self._table = self._fingerprints = None

    def _kept_partial(self) -> Path:
        """Partial record sets: the folder of the records' kept digest and layout."""
        assert self._keep is not None
        return self._keep / "partial"

    def _partial_binding(self) -> str | None:
        """Partial record sets: what kept records of this party are bound to (its run,
        secret, name, ID column and table's digest: of a file's bytes or of a table in
        memory), or None without a state folder or a table whose bytes can be digested."""
        if self._keep is None:
            return None
        if "source" not in self._state:
            table = self._table
            if isinstance(table, HeldTable):
                source = table.source()
            else:
                assert table is not None and self._fingerprints is not None
                source = table_digest(table, self._fingerprints)
            self._state["source"] = source
        source = self._state["source"]
        if source is None:
            return None
        return binding(self._secret, self._context, self.name, self._id_column, source)

    def aligned(self) -> Aligned:
        """This party's records in the common row order (aligned on first use; the input
        table is then dropped). ConfigError when it holds more than max_rows records."""
        if self._aligned is None and self.plan.regions is not None:
            raise ConfigError(
                "with partial record sets the records are laid out by the deal's slots: "
                "open the deal first."
            )
        if self._aligned is None:
            plan, table = self.plan, self._table
            if isinstance(table, HeldTable):
                self._aligned = table.align(self.spec, self._secret, self._context, plan)
            else:
                assert table is not None and self._fingerprints is not None
                self._aligned = self._align_in_memory(table, self._fingerprints)
            self._table = self._fingerprints = None
        return self._aligned

    def _align_in_memory(self, table: EncodedTable, fingerprints: np.ndarray) -> Aligned:
        """``table``'s records aligned, or read back from the folder given to
        :meth:`keep_aligned` when an earlier process kept them there for the same run,
        secret, party and table (its codes, after binning, and ID fingerprints)."""
        plan = self.plan

        def align() -> AlignedTable:
            return AlignedTable(
                table.codes, fingerprints, self._secret, self._context,
                plan.buckets, plan.capacity, plan.max_rows,
            )  # fmt: skip

        if self._keep is None:
            return align()
        source = table_digest(table, fingerprints)
        bound = binding(self._secret, self._context, self.name, self._id_column, source)
        return kept_or_aligned(self._keep, bound, self.spec, plan.rows, align)

    def commitment(self) -> bytes:
        """This party's data commitment for this run: HMAC-SHA256 of its data digest under
        a key derived from its local secret (which nobody else holds) and bound to the group
        secret, so the server learns nothing of the data from it, yet a changed table, key
        pair or group secret gives another commitment, and so another admit digest and
        another deal (see :meth:`SecureServer.deal`)."""
        group = hashlib.sha256(b"vertimrf/group-secret" + self._secret).hexdigest()
        config_hash = self.config.config_hash()
        key = derive(self._local, "data-commitment", config_hash, self.name, group)
        digest = self.data_digest() if self.plan.regions is None else self._records_digest()
        return mac(key, digest.encode())

    def _records_digest(self) -> str:
        """Partial record sets: the digest of this party's records (ID fingerprints and
        codes) in token order, :func:`~vertimrf.party.tokens.records_digest`, which no slot
        changes (computed once, before the layout, and kept with the records' sorted
        tokens)."""
        if "records" not in self._state:
            kept = self._kept_records()
            if kept is not None:
                self._state["records"] = kept.digest
            else:
                records = self._partial_records()
                bound = self._partial_binding()
                if bound is not None:
                    keep_records(
                        self._kept_partial(), bound, records.digest, records.n,
                        records.sorted_tokens(),
                    )  # fmt: skip
                self._state["records"] = records.digest
        return str(self._state["records"])

    def _kept_records(self) -> KeptRecords | None:
        """Partial record sets: this party's records digest and sorted tokens as an earlier
        process of the run kept them (read once per process), or None."""
        if "kept" not in self._state:
            bound = self._partial_binding()
            kept = None if bound is None else load_records(self._kept_partial(), bound)
            self._state["kept"] = kept
        return cast("KeptRecords | None", self._state["kept"])

    def _inputs(self) -> dict[str, str]:
        """The digests of every input this party's steps have used so far (its data, the
        deal, each peer blob read, the round-2 deal and blobs): what its noise, pads and
        nonces are keyed by."""
        inputs: dict[str, str] = self._state.setdefault("inputs", {})
        return inputs

    def _label_key(self, stream: str, *label: str) -> bytes:
        """The key of ``stream`` under this party's local secret, bound to the run, the
        party, ``label``, its data and its deal: a re-run on the same inputs gets the same
        bytes."""
        return derive(self._local, stream, *self._bound(*label))

    def _bound(self, *label: str) -> tuple[str, ...]:
        """The inputs a private stream of this party is bound to: the run, the party,
        ``label``, its data and its deal."""
        config_hash, deal = self.config.config_hash(), self._state.get("deal_hash", "")
        return (config_hash, self.name, *label, self.data_digest(), deal)

    def _once(self, step: str) -> None:
        self._check_step(step)
        self._state.setdefault("done", set()).add(step)

    def _check_step(self, step: str) -> None:
        if step in self._state.get("done", ()):
            raise PrivacyBudgetError(f"party {self.name!r} already ran {step!r}; each runs once.")

    def data_digest(self) -> str:
        """SHA-256 of this party's records: their ID fingerprints and codes, bucket by
        bucket in row order (:mod:`vertimrf.party.aligned`; its private state and derived
        keys are bound to it). With partial record sets: their digest in token order
        (:meth:`commitment`'s), the same before and after the deal lays them out (what binds
        the keyed streams to the slots is the deal, which carries them)."""
        if self.plan.regions is not None:
            return self._records_digest()
        return self.aligned().data_digest

    def _state_meta(self, binding: str) -> dict[str, Any]:
        return {
            "party": self.name,
            "config_hash": self.config.config_hash(),
            "data": self.data_digest(),
            "binding": binding,
        }

    def save_state(self, path: str | os.PathLike, *, binding: str = "") -> None:
        """Write what :meth:`measure` needs after :meth:`release`: each pair's share and the
        record-set digest, with the run, the party, a hash of its data and of its deal, and
        the caller's ``binding`` (e.g. a digest of its input files). The file is private (it
        holds shares, never sent), written atomically with mode 0600; no pickle."""
        st = self._state
        if "shares" not in st or "deal_hash" not in st:
            raise ConfigError("save_state needs the shares: run release(blobs) first.")
        meta = {
            **self._state_meta(binding),
            "deal": st["deal_hash"],
            "digest": st["digest"].hex(),
            "done": sorted(st.get("done", ())),
            "inputs": self._inputs(),
        }
        arrays = {f"s/{key}": share for key, share in st["shares"].items()}
        write_container(path, STATE_KIND, meta, arrays)

    def load_state(
        self, path: str | os.PathLike, *, deal: bytes | None = None, binding: str = ""
    ) -> None:
        """Read a state written by :meth:`save_state` in an earlier process, so that
        :meth:`measure` runs from the kept shares. MessageError when the file is malformed,
        oversized, or of another run, party, data set, ``binding`` or (if given) ``deal``."""
        plan, p = self.plan, self.index
        keys = {  # every pair's bound: another party's state is refused by name, below
            plan.pair_name(a, b): 8 * plan.widths[a] * plan.widths[b] for a, b in plan.pairs()
        }

        def bound(name: str) -> int | None:
            return keys.get(name[2:]) if name.startswith("s/") else None

        meta, arrays = read_container(path, STATE_KIND, array_bytes=bound)
        want = self._state_meta(binding)
        what = {
            "party": "another party's",
            "config_hash": "another run's (config hash)",
            "data": "made from another data set's (" + RUN_CHANGED + ")",
            "binding": "made from other input files'",
        }
        for field, label in what.items():
            if not isinstance(meta, dict) or meta.get(field) != want[field]:
                raise MessageError(
                    f"{path}: this secure state is {label}, not {self.name!r}'s in this run "
                    "with this data: pass the state that this party's `release` wrote in this "
                    "run."
                )
        if deal is not None and meta.get("deal") != sha256_parts(bytes(deal)):
            raise MessageError(
                f"{path}: this secure state was made from another deal: pass the state that "
                "`release` wrote with this deal."
            )
        shares = {k[2:]: v for k, v in arrays.items()}
        try:
            digest = bytes.fromhex(meta["digest"])
            done = {str(d) for d in meta["done"]}
            inputs = {str(k): str(v) for k, v in meta["inputs"].items()}
        except (AttributeError, KeyError, TypeError, ValueError):
            raise MessageError(f"{path}: malformed secure state.") from None
        shapes = {
            plan.pair_name(a, b): (plan.widths[a], plan.widths[b])
            for a, b in plan.pairs()
            if p in (a, b)
        }
        if set(shares) != set(shapes) or any(
            v.dtype != np.uint64 or v.shape != shapes[k] for k, v in shares.items()
        ):
            raise MessageError(
                f"{path}: the state's shares do not match this run's pairs and widths."
            )
        if SELECT not in done:
            raise MessageError(f"{path}: the state records no release.")
        self._state.update(shares=shares, digest=digest, done=done, deal_hash=meta.get("deal"))
        self._inputs().update(inputs)
