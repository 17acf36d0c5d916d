"""Fetching raw data: source order, verification on members, safe unpacking, atomic outputs.

Small synthetic datasets (a module-like object with NAME and SOURCES) in temporary folders; no
network: URLs are file:// or a closed local port.
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import re
import tarfile
import types
import zipfile
from pathlib import Path

import pytest

from asynctm.datasets import DATASETS, get_module
from asynctm.datasets.__main__ import main as cli
from asynctm.datasets.base import RawFile, RawFolder, Source, digest_lines, folder_digest
from asynctm.datasets.fetch import (
    MANIFEST,
    ChecksumError,
    FetchError,
    UnsafeArchiveError,
    fetch,
    safe_relpath,
    verify,
)

CSV = b"a,b,target\n1,2,3\n4,5,6\n"
NOTES = b"some notes\n"
DOC1, DOC2 = b"first document\n", b"second document\n"
DEAD_URL = "http://127.0.0.1:9/nothing.zip"  # port 9 (discard) is closed: fails at once, offline


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def dataset(*sources: Source, name: str = "toy") -> types.ModuleType:
    mod = types.ModuleType(f"asynctm.datasets.{name}")
    mod.NAME, mod.SOURCES = name, tuple(sources)
    return mod


def folder_hash(files: dict) -> str:
    return digest_lines({rel: sha(data) for rel, data in files.items()})


def make_zip(path: Path, entries: dict, symlinks: dict = ()) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
        for name, target in dict(symlinks).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120777 << 16)  # S_IFLNK, as zip -y stores a link
            z.writestr(info, target)
    return path


def make_tar(path: Path, entries: dict, extra=()) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:xz") as t:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        for info in extra:
            t.addfile(info)
    return path


def nothing_left(raw_dir: Path) -> bool:
    """No member, manifest or staging folder: the raw folder is absent or empty."""
    return not raw_dir.exists() or not any(raw_dir.iterdir())


FILE_SOURCE = Source(url=DEAD_URL, mirror_path="toy/table.csv", kind="file", members=(RawFile("table.csv", sha(CSV)),))
ZIP_SOURCE = Source(
    url=DEAD_URL,
    mirror_path="toy/toy.zip",
    kind="zip",
    members=(RawFile("table.csv", sha(CSV)), RawFile("docs/notes.txt", sha(NOTES))),
)
DOCS = {"docs/a/1.txt": DOC1, "docs/a/2.txt": DOC2}
TAR_SOURCE = Source(
    url=DEAD_URL,
    mirror_path="toy/toy.tar.xz",
    kind="tar",
    strip=1,  # the archive wraps everything in toy-1.0/
    members=(RawFolder("docs/a", folder_hash({"1.txt": DOC1, "2.txt": DOC2})),),
)


@pytest.fixture
def mirror_dir(tmp_path) -> Path:
    m = tmp_path / "mirror"
    (m / "toy").mkdir(parents=True)
    (m / "toy" / "table.csv").write_bytes(CSV)
    make_zip(m / "toy" / "toy.zip", {"table.csv": CSV, "docs/notes.txt": NOTES, "unused.bin": b"x"})
    make_tar(m / "toy" / "toy.tar.xz", {f"toy-1.0/{k}": v for k, v in DOCS.items()})
    return m


# --- success paths -----------------------------------------------------------------------------


def test_fetch_from_mirror_writes_members_and_manifest(tmp_path, mirror_dir):
    raw = tmp_path / "raw" / "toy"
    manifest = fetch(dataset(FILE_SOURCE, ZIP_SOURCE, TAR_SOURCE), raw, mirror_dir)
    assert (raw / "table.csv").read_bytes() == CSV
    assert (raw / "docs" / "notes.txt").read_bytes() == NOTES
    assert (raw / "docs" / "a" / "2.txt").read_bytes() == DOC2
    assert not (raw / "unused.bin").exists()  # only declared members are unpacked
    on_disk = json.loads((raw / MANIFEST).read_text())
    assert on_disk == manifest
    assert on_disk["members"]["table.csv"] == sha(CSV)
    assert on_disk["members"]["docs/a"] == folder_digest(raw / "docs" / "a")
    assert on_disk["raw_digest"] == digest_lines(on_disk["members"])
    assert sorted(p.name for p in raw.iterdir()) == [MANIFEST, "docs", "table.csv"]  # no staging left


def test_present_files_are_used_without_mirror_or_network(tmp_path, mirror_dir):
    raw = tmp_path / "raw"
    first = fetch(dataset(FILE_SOURCE, ZIP_SOURCE), raw, mirror_dir)
    (raw / MANIFEST).unlink()
    messages = []
    assert fetch(dataset(FILE_SOURCE, ZIP_SOURCE), raw, None, log=messages.append) == first
    assert any("already present and verified" in m for m in messages)


def test_repacked_archive_with_identical_members_verifies(tmp_path, mirror_dir):
    # Other member order, another compression, another extra file: same members, same digest.
    repacked = tmp_path / "mirror2" / "toy" / "toy.zip"
    make_zip(repacked, {"zzz.txt": b"new", "docs/notes.txt": NOTES, "table.csv": CSV})
    a = fetch(dataset(ZIP_SOURCE), tmp_path / "a", mirror_dir)
    b = fetch(dataset(ZIP_SOURCE), tmp_path / "b", tmp_path / "mirror2")
    assert a == b


def test_download_from_url_when_no_mirror(tmp_path, mirror_dir):
    src = Source(url=(mirror_dir / "toy" / "toy.zip").as_uri(), mirror_path="toy/absent.zip", kind="zip",
                 members=ZIP_SOURCE.members)
    raw = tmp_path / "raw"
    fetch(dataset(src), raw, None)
    assert (raw / "table.csv").read_bytes() == CSV
    # A mirror that lacks the file falls through to the URL as well.
    fetch(dataset(src), tmp_path / "raw2", mirror_dir)
    assert (tmp_path / "raw2" / "table.csv").read_bytes() == CSV


def test_mirror_may_hold_another_shape_than_the_url(tmp_path):
    m = tmp_path / "mirror"
    (m / "toy").mkdir(parents=True)
    (m / "toy" / "index.json.xz").write_bytes(lzma.compress(b'{"a": 1}'))
    src = Source(url=DEAD_URL, mirror_path="toy/index.json.xz", kind="file", mirror_kind="xz",
                 members=(RawFile("index.json", sha(b'{"a": 1}')),))
    fetch(dataset(src), tmp_path / "raw", m)
    assert (tmp_path / "raw" / "index.json").read_bytes() == b'{"a": 1}'


def test_present_but_damaged_file_is_fetched_again(tmp_path, mirror_dir):
    raw = tmp_path / "raw"
    fetch(dataset(FILE_SOURCE), raw, mirror_dir)
    (raw / "table.csv").write_bytes(CSV.replace(b"4", b"5"))
    fetch(dataset(FILE_SOURCE), raw, mirror_dir)
    assert (raw / "table.csv").read_bytes() == CSV


def test_optional_source_is_skipped_when_unavailable(tmp_path, mirror_dir):
    opt = Source(url=DEAD_URL, mirror_path="toy/extra.npz", kind="file", optional=True,
                 members=(RawFile("extra.npz", sha(b"npz")),))
    manifest = fetch(dataset(FILE_SOURCE, opt), tmp_path / "raw", mirror_dir, timeout=5)
    assert list(manifest["members"]) == ["table.csv"]
    (mirror_dir / "toy" / "extra.npz").write_bytes(b"npz")
    manifest = fetch(dataset(FILE_SOURCE, opt), tmp_path / "raw", mirror_dir)
    assert list(manifest["members"]) == ["extra.npz", "table.csv"]


# --- verification failures: clear message, nothing left behind ---------------------------------


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda b: b[:5] + bytes([b[5] ^ 1]) + b[6:], id="corrupted-byte"),
        pytest.param(lambda b: b[: len(b) // 2], id="truncated"),
        pytest.param(lambda b: b"season,cnt\n1,16\n", id="wrong-file"),
    ],
)
def test_checksum_mismatch_names_file_and_hashes(tmp_path, mirror_dir, damage):
    bad = damage(CSV)
    (mirror_dir / "toy" / "table.csv").write_bytes(bad)
    raw = tmp_path / "raw" / "toy"
    with pytest.raises(ChecksumError) as e:
        fetch(dataset(FILE_SOURCE), raw, mirror_dir)
    msg = str(e.value)
    assert "toy" in msg and "table.csv" in msg
    assert f"expected sha256 {sha(CSV)}" in msg and f"got {sha(bad)}" in msg
    assert nothing_left(raw)


def test_checksum_mismatch_inside_archive(tmp_path, mirror_dir):
    make_zip(mirror_dir / "toy" / "toy.zip", {"table.csv": CSV, "docs/notes.txt": NOTES + b"!"})
    raw = tmp_path / "raw"
    with pytest.raises(ChecksumError, match=r"docs/notes\.txt.*expected sha256"):
        fetch(dataset(ZIP_SOURCE), raw, mirror_dir)
    assert nothing_left(raw)


def test_folder_digest_mismatch(tmp_path, mirror_dir):
    make_tar(mirror_dir / "toy" / "toy.tar.xz", {"toy-1.0/docs/a/1.txt": DOC1, "toy-1.0/docs/a/3.txt": DOC2})
    raw = tmp_path / "raw"
    with pytest.raises(ChecksumError, match=r"docs/a.*expected folder digest"):
        fetch(dataset(TAR_SOURCE), raw, mirror_dir)
    assert nothing_left(raw)


@pytest.mark.parametrize("archive", ["toy.zip", "toy.tar.xz"])
def test_truncated_archive(tmp_path, mirror_dir, archive):
    path = mirror_dir / "toy" / archive
    path.write_bytes(path.read_bytes()[:-40])
    raw = tmp_path / "raw"
    with pytest.raises(FetchError, match=re.escape(archive)):
        fetch(dataset(ZIP_SOURCE if archive.endswith("zip") else TAR_SOURCE), raw, mirror_dir)
    assert nothing_left(raw)


def test_failure_in_a_later_source_leaves_no_manifest(tmp_path, mirror_dir):
    (mirror_dir / "toy" / "toy.zip").write_bytes(b"not a zip")
    raw = tmp_path / "raw"
    with pytest.raises(FetchError):
        fetch(dataset(FILE_SOURCE, ZIP_SOURCE), raw, mirror_dir)
    assert not (raw / MANIFEST).exists()
    assert not [p for p in raw.iterdir() if p.name.startswith(".")]  # no staging folder


def test_verify_detects_a_change_after_fetch(tmp_path, mirror_dir):
    raw = tmp_path / "raw"
    fetch(dataset(FILE_SOURCE, TAR_SOURCE), raw, mirror_dir)
    assert (verify(dataset(FILE_SOURCE, TAR_SOURCE), raw)["raw_digest"]
            == json.loads((raw / MANIFEST).read_text())["raw_digest"])
    (raw / "docs" / "a" / "new.txt").write_bytes(b"added later")
    with pytest.raises(ChecksumError, match="docs/a"):
        verify(dataset(FILE_SOURCE, TAR_SOURCE), raw)


# --- unsafe archives ---------------------------------------------------------------------------


def _tar_link(name: str, target: str, hard: bool = False) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.LNKTYPE if hard else tarfile.SYMTYPE
    info.linkname = target
    return info


def _fifo(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.FIFOTYPE
    return info


UNSAFE = {
    "zip-dotdot": ("zip", {"table.csv": CSV, "../evil.txt": b"x"}, {}, "outside the target folder"),
    "zip-nested-dotdot": ("zip", {"docs/../../evil.txt": b"x", "table.csv": CSV}, {}, "outside the target folder"),
    "zip-absolute": ("zip", {"/tmp/evil.txt": b"x", "table.csv": CSV}, {}, "absolute path"),
    "zip-symlink": ("zip", {"table.csv": CSV}, {"docs/notes.txt": "/etc/passwd"}, "symbolic link"),
    "tar-dotdot": ("tar", {"toy-1.0/../../evil.txt": b"x"}, (), "outside the target folder"),
    "tar-absolute": ("tar", {"/tmp/evil.txt": b"x"}, (), "absolute path"),
    "tar-symlink": ("tar", {}, (_tar_link("toy-1.0/docs/a/1.txt", "/etc/passwd"),), "symbolic link"),
    "tar-hardlink": ("tar", {}, (_tar_link("toy-1.0/docs/a/1.txt", "/etc/passwd", hard=True),), "hard link"),
    "tar-fifo": ("tar", {}, (_fifo("toy-1.0/docs/a/1.txt"),), "not a regular file"),
}


@pytest.mark.parametrize("case", UNSAFE, ids=list(UNSAFE))
def test_unsafe_archive_members_are_rejected(tmp_path, case):
    kind, entries, links, message = UNSAFE[case]
    m = tmp_path / "deep" / "mirror"
    if kind == "zip":
        make_zip(m / "toy" / "toy.zip", entries, links)
        src = ZIP_SOURCE
    else:
        make_tar(m / "toy" / "toy.tar.xz", {**entries, "toy-1.0/docs/a/2.txt": DOC2}, links)
        src = TAR_SOURCE
    raw = tmp_path / "deep" / "raw" / "toy"
    with pytest.raises(UnsafeArchiveError, match=message) as e:
        fetch(dataset(src), raw, m)
    assert "toy" in str(e.value)
    assert nothing_left(raw)
    assert not list(tmp_path.rglob("evil.txt"))  # nothing escaped either


@pytest.mark.parametrize(
    "name, ok",
    [("a/b.txt", "a/b.txt"), ("./a//b.txt", "a/b.txt"), ("a\\b.txt", "a/b.txt"),
     ("../a", None), ("a/../../b", None), ("/a", None), ("C:\\a", None), ("\\\\host\\a", None)],
)
def test_safe_relpath(name, ok):
    if ok is None:
        with pytest.raises(UnsafeArchiveError):
            safe_relpath(name)
    else:
        assert safe_relpath(name).as_posix() == ok


# --- no data source ----------------------------------------------------------------------------


def test_missing_mirror_folder(tmp_path):
    raw = tmp_path / "raw"
    with pytest.raises(FetchError) as e:
        fetch(dataset(FILE_SOURCE), raw, tmp_path / "no-such-mirror")
    msg = str(e.value)
    assert "toy" in msg and "no-such-mirror" in msg and "does not exist" in msg and "data_mirror" in msg
    assert nothing_left(raw)


def test_no_network_and_no_mirror(tmp_path):
    raw = tmp_path / "raw"
    with pytest.raises(FetchError) as e:
        fetch(dataset(FILE_SOURCE), raw, None, timeout=5)
    msg = str(e.value)
    assert msg.startswith("toy:") and DEAD_URL in msg and "no mirror is configured" in msg
    assert "--config data_mirror=DIR" in msg and "toy/table.csv" in msg
    assert nothing_left(raw)


def test_cli_reports_errors_and_logs_them(tmp_path, capsys, monkeypatch):
    log = tmp_path / "logs" / "fetch.log"
    rc = cli(["fetch", "bike_sharing", "--raw-dir", str(tmp_path / "raw"), "--mirror", str(tmp_path / "none"),
              "--log", str(log)])
    assert rc == 1
    assert "error: bike_sharing: the mirror folder" in capsys.readouterr().err
    assert "does not exist" in log.read_text()


def test_cli_hash(tmp_path, capsys):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_bytes(CSV)
    assert cli(["hash", str(tmp_path / "d" / "x"), str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out.split("\n")
    assert out[0].startswith(sha(CSV)) and out[1].startswith(folder_hash({"x": CSV}))


# --- the real declarations ---------------------------------------------------------------------


def test_registry_holds_all_eight_datasets():
    assert list(DATASETS) == ["bike_sharing", "blogfeedback", "bbc_sport", "newsgroups20", "semeval", "imdb",
                              "wsd_apple", "wsd_java"]
    with pytest.raises(ValueError, match="unknown dataset 'nope'"):
        get_module("nope")


@pytest.mark.parametrize("name", ["bike_sharing", "blogfeedback", "wsd_apple", "wsd_java"])
def test_declarations_are_complete(name, mirror):
    mod = get_module(name)
    assert mod.NAME == name and mod.PROTOCOLS[0] == "paper"
    for s in mod.SOURCES:
        assert s.url.startswith("https://") and s.kind in {"file", "zip", "tar", "xz"}
        assert (mirror / s.mirror_path).is_file(), s.mirror_path
        for m in s.members:
            h = m.sha256 if isinstance(m, RawFile) else m.digest
            assert re.fullmatch(r"[0-9a-f]{64}", h)


def test_folder_digest_ignores_order_and_times_but_not_names(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for root, order in ((a, ["x/1", "y"]), (b, ["y", "x/1"])):
        for rel in order:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(rel.encode())
    assert folder_digest(a) == folder_digest(b)
    (b / "y").rename(b / "z")
    assert folder_digest(a) != folder_digest(b)
