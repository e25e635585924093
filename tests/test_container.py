"""The hostile-input container reader: round trips, zip bombs, malformed files and fuzzing."""

from __future__ import annotations

import hashlib
import io
import json
import re
import struct
import time
import warnings
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.zip_bombs import (
    BOMB_CHUNKS,
    BOMB_ITEMS,
    KIND,
    MiB,
    bomb,
    crc_of_zeros,
    make_manifest,
    measure,
    npy,
)
from vertimrf.container import (
    _CappedReader,
    npz_bytes,
    read_container,
    write_container,
)
from vertimrf.errors import MessageError


def _allow(limit: int = MiB, names: tuple[str, ...] | None = None) -> Callable[[str], int | None]:
    """An ``array_bytes`` bound: ``limit`` bytes for ``names`` (any name if None)."""
    return lambda name: limit if names is None or name in names else None


def _index(blob: bytes, dtype: str, shape: list) -> dict:
    return {"dtype": dtype, "shape": shape, "sha256": hashlib.sha256(blob).hexdigest()}


def _zip(
    path: Path,
    entries: dict[str, bytes] | list[tuple[str, bytes]],
    compression: int = zipfile.ZIP_DEFLATED,
) -> Path:
    items = entries.items() if isinstance(entries, dict) else entries
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w", compression) as zf:
        warnings.simplefilter("ignore")  # a duplicate name is on purpose
        for name, data in items:
            zf.writestr(name, data)
    return path


def _container(
    path: Path,
    blobs: dict[str, bytes],
    index: dict | None = None,
    manifest: object = None,
    mbytes: bytes | None = None,
    msum: bytes | None = None,
    compression: int = zipfile.ZIP_DEFLATED,
) -> Path:
    """A container from raw npy ``blobs``; every other part may be overridden."""
    if index is None:
        index = {}
        for name, blob in blobs.items():
            arr = np.load(io.BytesIO(blob), allow_pickle=False)
            index[name] = _index(blob, arr.dtype.str, list(arr.shape))
    if mbytes is None:
        mbytes = json.dumps(make_manifest(index) if manifest is None else manifest).encode()
    if msum is None:
        msum = hashlib.sha256(mbytes).hexdigest().encode()
    entries = {"manifest.json": mbytes, "manifest.sha256": msum}
    entries.update({f"{name}.npy": blob for name, blob in blobs.items()})
    return _zip(path, entries, compression)


def _npy_of(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


# --------------------------------------------------------------------------- round trips
def test_round_trip_of_several_dtypes_and_shapes(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {
        "u8_3d": rng.integers(0, 256, (2, 3, 4)).astype(np.uint8),
        "i64_empty": np.zeros(0, dtype=np.int64),
        "f32": rng.random(7).astype(np.float32),
        "f64_empty_2d": np.zeros((0, 3)),
        "f64": rng.standard_normal((4, 5)),
        "bool": np.array([True, False, True]),
        "big_endian": np.arange(6, dtype=">i4").reshape(2, 3),
        "scalar": np.array(3.5),
    }
    meta = {"party": "A", "n": 3, "nested": {"x": [1, 2.5, None]}}
    path = tmp_path / "m.vmrf"
    write_container(path, KIND, meta, arrays)
    seen: list[str] = []
    back_meta, back = read_container(path, KIND, array_bytes=lambda name: seen.append(name) or 1024)
    assert back_meta == meta
    assert sorted(back) == sorted(arrays) == sorted(seen)
    for name, arr in arrays.items():
        assert back[name].dtype == arr.dtype and back[name].shape == arr.shape
        np.testing.assert_array_equal(back[name], arr)
        assert back[name].flags.writeable
    back["f64"][0, 0] = 1.0  # writable


def test_stored_entries_are_read_too(tmp_path):
    blob = _npy_of(np.arange(5, dtype=np.int16))
    path = _container(tmp_path / "s.vmrf", {"a": blob}, compression=zipfile.ZIP_STORED)
    _, arrays = read_container(path, KIND, array_bytes=_allow())
    np.testing.assert_array_equal(arrays["a"], np.arange(5))


def test_bound_is_exact(tmp_path):
    path = tmp_path / "m.vmrf"
    write_container(path, KIND, {}, {"a": np.zeros(10, dtype=np.float64)})
    read_container(path, KIND, array_bytes=_allow(80))
    with pytest.raises(MessageError, match="at most 79"):
        read_container(path, KIND, array_bytes=_allow(79))


def test_capped_reader_never_reads_past_its_limit():
    raw = io.BytesIO(bytes(1000))
    reader = _CappedReader(raw, 10, "thing")
    assert reader.read(4) == bytes(4)
    with pytest.raises(MessageError, match="thing is larger than the 10 bytes"):
        reader.read()
    assert raw.tell() == 11  # one byte past the limit, not the whole stream
    exact = _CappedReader(io.BytesIO(bytes(10)), 10, "x")
    assert exact.read_all() == bytes(10)
    assert exact.sha.hexdigest() == hashlib.sha256(bytes(10)).hexdigest()
    with pytest.raises(MessageError, match="truncated"):
        _CappedReader(io.BytesIO(bytes(5)), 10, "x").read_exact(10)


@pytest.fixture(scope="module")
def bombs(tmp_path_factory):
    """Zip bombs of ~1 MB that inflate to > 1 GiB: one honest, three with lying sizes."""
    root = tmp_path_factory.mktemp("bombs")
    header = npy("|u1", (BOMB_ITEMS,), b"")
    full_crc = crc_of_zeros(header, BOMB_CHUNKS)
    # The data checksum is not computed (hashing 1 GiB is slow and never reached).
    fake = "0" * 64
    small = npy("|u1", (1000,), bytes(1000))
    return {
        # Declares its true size (header + 1 GiB).
        "honest": bomb(root / "honest.vmrf", BOMB_ITEMS, len(header) + BOMB_ITEMS, full_crc, fake),
        # Declares 1128 bytes (with their CRC) while its npy header says 1 GiB.
        "lying_header_huge": bomb(
            root / "l1.vmrf", BOMB_ITEMS, 1128, zlib.crc32(header + bytes(1000)), fake
        ),
        # Declares 1128 bytes and a 1000-byte array, with the CRC of the whole stream.
        "lying_crc_of_all": bomb(root / "l2.vmrf", 1000, 1128, full_crc, fake),
        # A consistent lie: CRC and SHA-256 of the first 1128 bytes only.
        "lying_consistent": bomb(
            root / "l3.vmrf", 1000, 1128, zlib.crc32(small), hashlib.sha256(small).hexdigest()
        ),
    }


@pytest.mark.parametrize(
    ("variant", "match"),
    [
        ("honest", "declares 1073741952 bytes uncompressed.*zip bomb"),
        ("lying_header_huge", "holds 1073741824 bytes of data; at most 1048576"),
        ("lying_crc_of_all", "Bad CRC-32"),
        ("lying_consistent", None),
    ],
)
def test_zip_bombs_are_stopped_fast_and_in_little_memory(bombs, variant, match):
    path = bombs[variant]
    assert path.stat().st_size < 1_200_000  # ~1 MB on disk, > 1 GiB inflated
    seconds, peak, rss_growth, outcome = measure(
        lambda: read_container(path, KIND, array_bytes=_allow(MiB, ("x",)))
    )
    print(
        f"{variant}: {seconds * 1000:.1f} ms, tracemalloc peak {peak / MiB:.2f} MiB, "
        f"ru_maxrss growth {rss_growth / MiB:.2f} MiB, outcome {outcome!r:.120}"
    )
    if match is None:
        # Only the declared 1128 bytes are ever inflated; they form a valid array.
        assert isinstance(outcome, tuple), outcome
        assert outcome[1]["x"].shape == (1000,)
    else:
        assert isinstance(outcome, MessageError), outcome
        assert re.search(match, str(outcome)) and str(path) in str(outcome)
    assert seconds < 1.0
    assert peak < 100 * MiB
    assert rss_growth < 100 * MiB


# --------------------------------------------------------------------------- malformed files
def _good_blobs() -> dict[str, bytes]:
    return {
        "a": _npy_of(np.arange(12, dtype=np.int64).reshape(3, 4)),
        "b": _npy_of(np.linspace(0, 1, 5)),
    }


def _edit_manifest(edit: Callable[[dict], object]) -> Callable[[Path], Path]:
    def build(path: Path) -> Path:
        blobs = _good_blobs()
        index = {
            name: _index(blob, arr.dtype.str, list(arr.shape))
            for name, blob in blobs.items()
            for arr in [np.load(io.BytesIO(blob))]
        }
        manifest = make_manifest(index)
        edit(manifest)
        return _container(path, blobs, manifest=manifest)

    return build


def _with_blob(blob: bytes, dtype: str, shape: list) -> Callable[[Path], Path]:
    def build(path: Path) -> Path:
        return _container(path, {"a": blob}, index={"a": _index(blob, dtype, shape)})

    return build


def _good(path: Path) -> Path:
    return _container(path, _good_blobs())


def _bytes(data: bytes) -> Callable[[Path], Path]:
    def build(path: Path) -> Path:
        path.write_bytes(data)
        return path

    return build


def _truncated(path: Path) -> Path:
    data = _good(path).read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def _manifest_bytes(mbytes: bytes) -> Callable[[Path], Path]:
    return lambda path: _container(path, _good_blobs(), mbytes=mbytes)


def _tampered_array(path: Path) -> Path:
    blobs = _good_blobs()
    good = _container(path.with_suffix(".good"), blobs)
    with zipfile.ZipFile(good) as zf:
        entries = {n: zf.read(n) for n in zf.namelist()}
    entries["a.npy"] = entries["a.npy"][:-1] + bytes([entries["a.npy"][-1] ^ 1])
    return _zip(path, entries)


def _rezip(edit: Callable[[dict[str, bytes]], object]) -> Callable[[Path], Path]:
    """Rewrite a good container's entries (a dict name -> bytes) through ``edit``."""

    def build(path: Path) -> Path:
        with zipfile.ZipFile(_good(path.with_suffix(".good"))) as zf:
            entries = {n: zf.read(n) for n in zf.namelist()}
        out = edit(entries)
        return _zip(path, entries if out is None else out)

    return build


def _patched_central_directory(offset: int, fmt: str, value: int) -> Callable[[Path], Path]:
    """Patch a field of the first array entry's central directory record."""

    def build(path: Path) -> Path:
        data = bytearray(_good(path).read_bytes())
        cd = [i for i in range(len(data) - 4) if data[i : i + 4] == b"PK\x01\x02"]
        at = cd[2]  # entries: manifest.json, manifest.sha256, a.npy, b.npy
        struct.pack_into(fmt, data, at + offset, value)
        path.write_bytes(bytes(data))
        return path

    return build


OBJ = npy("|O", (1,), bytes(8))
F8_AS_I8 = _npy_of(np.arange(4, dtype=np.int64))

MALFORMED = {
    "missing file": (lambda p: p.with_name("nope.vmrf"), "cannot open"),
    "a directory": (lambda p: p.parent, "cannot open"),
    "not a zip": (_bytes(b"hello, this is not a zip file at all"), "unreadable"),
    "empty file": (_bytes(b""), "unreadable"),
    "truncated": (_truncated, "truncated|unreadable"),
    "missing manifest": (
        lambda p: _zip(p, {"a.npy": _good_blobs()["a"]}),
        "no manifest",
    ),
    "manifest checksum mismatch": (
        lambda p: _container(p, _good_blobs(), msum=b"0" * 64),
        "manifest checksum",
    ),
    "array checksum mismatch": (_tampered_array, "checksum"),
    "manifest not JSON": (_manifest_bytes(b"{not json"), "not valid JSON"),
    "manifest not UTF-8": (_manifest_bytes(b'{"a": "\xff\xfe"}'), "UTF-8"),
    "manifest nested 100000 deep": (
        _manifest_bytes(b"[" * 100_000 + b"]" * 100_000),
        "nested too deeply",
    ),
    "manifest is a list": (_manifest_bytes(b"[1, 2, 3]"), "JSON list, not an object"),
    "huge integer in manifest": (_manifest_bytes(b"[" + b"9" * 5000 + b"]"), "JSON"),
    "manifest too large": (_manifest_bytes(b" " * ((1 << 22) + 1) + b"{}"), "declares"),
    "wrong format": (_edit_manifest(lambda m: m.update(format="zip")), "unknown format"),
    "version true": (_edit_manifest(lambda m: m.update(version=True)), "version True"),
    "wrong kind": (_edit_manifest(lambda m: m.update(kind="server")), "expected a"),
    "meta is a list": (_edit_manifest(lambda m: m.update(meta=[])), "'meta'"),
    "arrays is a list": (_edit_manifest(lambda m: m.update(arrays=[])), "'arrays'"),
    "array spec is a string": (
        _edit_manifest(lambda m: m["arrays"].update(a="x")),
        "must be an object",
    ),
    "array spec missing sha256": (
        _edit_manifest(lambda m: m["arrays"]["a"].pop("sha256")),
        "must be an object",
    ),
    "shape abc": (_edit_manifest(lambda m: m["arrays"]["a"].update(shape="abc")), "shape"),
    "shape negative": (_edit_manifest(lambda m: m["arrays"]["a"].update(shape=[-3, -4])), "shape"),
    "shape of bools": (_edit_manifest(lambda m: m["arrays"]["a"].update(shape=[True])), "shape"),
    "dtype not a string": (_edit_manifest(lambda m: m["arrays"]["a"].update(dtype=8)), "dtype"),
    "sha256 not hex": (_edit_manifest(lambda m: m["arrays"]["a"].update(sha256="xyz")), "sha256"),
    "array listed but missing": (
        _rezip(lambda e: [(n, d) for n, d in e.items() if n != "b.npy"]),
        "'b' is missing",
    ),
    "array not listed": (_edit_manifest(lambda m: m["arrays"].pop("b")), "not listed"),
    "object dtype": (_with_blob(OBJ, "|O", [1]), "dtype.*only bool, integer and float"),
    "string dtype": (_with_blob(npy("<U2", (1,), bytes(8)), "<U2", [1]), "only bool"),
    "structured dtype": (
        _with_blob(_npy_of(np.zeros(2, dtype=[("x", "<i4")])), "|V4", [2]),
        "only bool",
    ),
    "complex dtype": (_with_blob(_npy_of(np.zeros(2, complex)), "<c16", [2]), "only bool"),
    "fortran order": (
        _with_blob(npy("<i8", (2, 2), bytes(32), fortran=True), "<i8", [2, 2]),
        "Fortran",
    ),
    "dtype differs from manifest": (_with_blob(F8_AS_I8, "<f8", [4]), "wrong dtype or shape"),
    "shape differs from manifest": (_with_blob(F8_AS_I8, "<i8", [2, 2]), "wrong dtype or shape"),
    "bad npy magic": (_with_blob(b"NOTNUMPY" + bytes(100), "<i8", [4]), "bad npy header"),
    "garbage npy header": (
        _with_blob(b"\x93NUMPY\x01\x00\x10\x00{'descr': ((((((\n" + bytes(8), "<i8", [1]),
        "bad npy header",
    ),
    "npy header with empty descr tuple": (
        _with_blob(npy("<i8", (1,), bytes(8)).replace(b"'<i8'", b"()   "), "<i8", [1]),
        "bad npy header",
    ),
    "npy version 3": (
        _with_blob(npy("<i8", (1,), bytes(8)).replace(b"\x01\x00", b"\x03\x00", 1), "<i8", [1]),
        "version",
    ),
    "short data": (_with_blob(npy("<i8", (4,), bytes(16)), "<i8", [4]), "declares"),
    "trailing data": (_with_blob(npy("<i8", (1,), bytes(16)), "<i8", [1]), "declares"),
    "bool holding 2": (_with_blob(npy("|b1", (2,), b"\x01\x02"), "|b1", [2]), "0 and 1"),
    "duplicate entry": (
        _rezip(lambda e: [*e.items(), ("a.npy", e["a.npy"])]),
        "twice",
    ),
    "unexpected entry": (_rezip(lambda e: e.update({"notes.txt": b"hi"})), "unexpected entry"),
    "unsupported compression": (_patched_central_directory(10, "<H", 99), "compression"),
    "bzip2 compression": (
        lambda p: _container(p, _good_blobs(), compression=zipfile.ZIP_BZIP2),
        "compression",
    ),
    "encrypted flag": (_patched_central_directory(8, "<H", 1), "encrypted"),
    "declared size lies small": (_patched_central_directory(24, "<I", 100), "npy header|CRC"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_files_raise_message_error(tmp_path, case):
    build, match = MALFORMED[case]
    path = build(tmp_path / "bad.vmrf")
    with pytest.raises(MessageError, match=match) as info:
        read_container(path, KIND, array_bytes=_allow(MiB, ("a", "b")))
    assert str(path) in str(info.value)


def test_unexpected_and_oversize_arrays(tmp_path):
    path = _good(tmp_path / "m.vmrf")
    with pytest.raises(MessageError, match="unexpected array 'b'"):
        read_container(path, KIND, array_bytes=_allow(MiB, ("a",)))
    # 'a' holds 96 bytes of data: its declared size passes (header allowance), nbytes not.
    with pytest.raises(MessageError, match="'a' holds 96 bytes of data; at most 50 allowed"):
        read_container(path, KIND, array_bytes=lambda n: 50 if n == "a" else MiB)
    # Far too large: refused on the declared size, before anything is inflated.
    big = _container(tmp_path / "big.vmrf", {"a": _npy_of(np.zeros(200_000, np.uint8))})
    with pytest.raises(MessageError, match="declares"):
        read_container(big, KIND, array_bytes=_allow(1000))


def test_too_many_entries(tmp_path, monkeypatch):
    import vertimrf.container as container

    monkeypatch.setattr(container, "_MAX_ENTRIES", 3)
    with pytest.raises(MessageError, match="at most 3 entries"):
        read_container(_good(tmp_path / "m.vmrf"), KIND, array_bytes=_allow())


def test_message_error_is_not_wrapped_twice(tmp_path):
    # The capped stream raises inside numpy's header parser; it must come out unchanged.
    blob = b"\x93NUMPY\x01\x00" + struct.pack("<H", 60_000) + b" " * 60_000
    path = _with_blob(blob, "<i8", [1])(tmp_path / "m.vmrf")
    with pytest.raises(MessageError, match="'a' header is larger than the 10012 bytes") as info:
        read_container(path, KIND, array_bytes=_allow())
    assert str(info.value).count(str(path)) == 1
    assert info.value.__cause__ is None and info.value.__context__ is None


# --------------------------------------------------------------------------- fuzzing
def _base_entries() -> dict[str, bytes]:
    blobs = {
        "a": _npy_of(np.arange(6, dtype=np.int32).reshape(2, 3)),
        "b": _npy_of(np.array([0.5, -1.0])),
        "c": _npy_of(np.array([True, False])),
    }
    index = {}
    for name, blob in blobs.items():
        arr = np.load(io.BytesIO(blob))
        index[name] = _index(blob, arr.dtype.str, list(arr.shape))
    mbytes = json.dumps(make_manifest(index, meta={"party": "A", "n": [1, 2]})).encode()
    entries = {"manifest.json": mbytes, "manifest.sha256": hashlib.sha256(mbytes).hexdigest()}
    entries.update({f"{n}.npy": b for n, b in blobs.items()})
    return {n: b if isinstance(b, bytes) else b.encode() for n, b in entries.items()}


def _zip_bytes(entries: dict[str, bytes], compression: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return buf.getvalue()


BASES = {
    "deflated": _zip_bytes(_base_entries(), zipfile.ZIP_DEFLATED),
    "stored": _zip_bytes(_base_entries(), zipfile.ZIP_STORED),
}

_offsets = st.integers(0, 1 << 16)
_mutation = st.one_of(
    st.tuples(st.just("flip"), _offsets, st.integers(0, 7)),
    st.tuples(st.just("set"), _offsets, st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("truncate"), _offsets),
    st.tuples(st.just("insert"), _offsets, st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("delete"), _offsets, st.integers(1, 16)),
    # A small-integer value (e.g. a length or size field) written at an offset.
    st.tuples(st.just("int"), _offsets, st.sampled_from(["<H", "<I"]), st.integers(0, 1 << 16)),
)


def _mutate(data: bytes, mutations: list[tuple]) -> bytes:
    buf = bytearray(data)
    for op, offset, *args in mutations:
        at = offset % (len(buf) + 1)
        if op == "flip" and at < len(buf):
            buf[at] ^= 1 << args[0]
        elif op == "set":
            buf[at : at + len(args[0])] = args[0]
        elif op == "truncate":
            del buf[at:]
        elif op == "insert":
            buf[at:at] = args[0]
        elif op == "delete":
            del buf[at : at + args[0]]
        elif op == "int" and at + struct.calcsize(args[0]) <= len(buf):
            struct.pack_into(args[0], buf, at, args[1] % (1 << (8 * struct.calcsize(args[0]))))
    return bytes(buf)


def _read_or_message_error(path: Path) -> None:
    try:
        meta, arrays = read_container(path, KIND, array_bytes=_allow(4096, ("a", "b", "c")))
    except MessageError as exc:
        assert str(path) in str(exc)
        return
    assert isinstance(meta, dict)
    assert all(isinstance(a, np.ndarray) and a.dtype.kind in "biuf" for a in arrays.values())


@pytest.fixture(scope="module")
def fuzz_path(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz") / "m.vmrf"


@settings(max_examples=200, deadline=None, derandomize=True)
@given(base=st.sampled_from(sorted(BASES)), mutations=st.lists(_mutation, min_size=1, max_size=4))
def test_fuzzed_container_bytes_read_or_raise_message_error(fuzz_path, base, mutations):
    fuzz_path.write_bytes(_mutate(BASES[base], mutations))
    _read_or_message_error(fuzz_path)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    entry=st.sampled_from(["manifest.json", "a.npy", "b.npy", "c.npy"]),
    mutations=st.lists(_mutation, min_size=1, max_size=4),
    resum=st.booleans(),
)
def test_fuzzed_entries_in_a_valid_zip_read_or_raise_message_error(
    fuzz_path, entry, mutations, resum
):
    """Mutate one entry's content inside an intact zip, optionally fixing its checksums,
    so the manifest / npy validation (not just zipfile's CRC) meets the damage."""
    entries = _base_entries()
    entries[entry] = _mutate(entries[entry], mutations)
    if resum:
        if entry == "manifest.json":
            entries["manifest.sha256"] = hashlib.sha256(entries[entry]).hexdigest().encode()
        else:
            manifest = json.loads(entries["manifest.json"])
            manifest["arrays"][entry[:-4]]["sha256"] = hashlib.sha256(entries[entry]).hexdigest()
            entries["manifest.json"] = json.dumps(manifest).encode()
            entries["manifest.sha256"] = (
                hashlib.sha256(entries["manifest.json"]).hexdigest().encode()
            )
    fuzz_path.write_bytes(_zip_bytes(entries, zipfile.ZIP_DEFLATED))
    _read_or_message_error(fuzz_path)


def test_the_same_arrays_written_later_give_the_same_bytes(tmp_path, monkeypatch):
    """No clock in the file: the zip entries carry a fixed time stamp, so a step re-run
    later writes byte-identical messages (checked with the clock moved by a day)."""
    arrays = {"x": np.arange(12, dtype=np.int64).reshape(3, 4)}
    write_container(tmp_path / "a.vmrf", "test", {"k": 1}, arrays)
    later = time.time() + 86_400
    monkeypatch.setattr(time, "time", lambda: later)
    monkeypatch.setattr(time, "localtime", lambda secs=None: time.gmtime(later))
    write_container(tmp_path / "b.vmrf", "test", {"k": 1}, arrays)
    assert (tmp_path / "a.vmrf").read_bytes() == (tmp_path / "b.vmrf").read_bytes()


def test_npz_bytes_carry_no_clock_and_load_with_numpy(monkeypatch):
    """The deals' inner archive: the same arrays later give the same bytes, and np.load
    (allow_pickle=False) reads them back exactly."""
    arrays = {"u": np.arange(5, dtype=np.uint64), "z/A+B": np.ones((2, 3), np.uint64)}
    first = npz_bytes(arrays)
    later = time.time() + 86_400
    monkeypatch.setattr(time, "time", lambda: later)
    monkeypatch.setattr(time, "localtime", lambda secs=None: time.gmtime(later))
    assert npz_bytes(arrays) == first
    with np.load(io.BytesIO(first), allow_pickle=False) as z:
        assert sorted(z.files) == sorted(arrays)
        for name, arr in arrays.items():
            np.testing.assert_array_equal(z[name], arr)
            assert z[name].dtype == arr.dtype
