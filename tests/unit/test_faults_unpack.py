"""``python -m gpu_host unpack``: bad tarballs from a GPU host are refused whole, with one line.

Every refusal leaves the target tree exactly as it was (no file, no folder, no staging folder); the small
tarballs are built here with tarfile, the oversized ones from crafted headers, so nothing large is written.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from asynctm.io import _host
from gpu_host import unpack as unpack_mod
from gpu_host.__main__ import main
from gpu_host.unpack import STAGING, UnpackError, unpack
from tests.helpers import REPO

RECORD = "results/semeval/tm_gpu/n40_T15_s3.9_e5/seed0.json"  # a committed record: passes the record gate
ABLATION = "results/ablation/bike_sharing/tm_gpu/n1280_T1280_s1.5_e100/async_linear/seed0.json"


def quiet(message):
    pass


def _tar(path: Path, members: list[tuple[str, bytes | None, str]]) -> Path:
    """A gzipped tarball of (name, data, kind) members: kind "file", "dir" or "sym"."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data, kind in members:
            info = tarfile.TarInfo(name)
            if kind == "sym":
                info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
                tar.addfile(info)
            elif kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


def _committed(rel: str) -> bytes:
    return (REPO / rel).read_bytes()


def _snapshot(tree: Path) -> dict[str, bytes | None]:
    """Every path below ``tree`` (folders as None) with its content: what a refused unpack must not change."""
    if not tree.exists():
        return {}
    return {p.relative_to(tree).as_posix(): (None if p.is_dir() else p.read_bytes()) for p in sorted(tree.rglob("*"))}


def _refused(out: Path, tree: Path, match: str, **kw) -> str:
    """Unpacking ``out`` into ``tree`` is refused with one line matching ``match``, and ``tree`` is unchanged."""
    before = _snapshot(tree)
    with pytest.raises(UnpackError, match=match) as info:
        unpack(out, into=tree, say=quiet, **kw)
    assert _snapshot(tree) == before
    assert "\n" not in str(info.value)
    return str(info.value)


@pytest.fixture
def out(tmp_path):
    d = tmp_path / "out"
    d.mkdir()
    return d


# --- what unpacked before still unpacks -----------------------------------------------------------------------

def test_a_valid_tarball_unpacks_and_keeps_identical_refuses_different_files(tmp_path, out):
    tree = tmp_path / "tree"
    log = RECORD.replace(".json", ".log")
    manifest = b'{"step": "paper", "done": []}\n'
    _tar(out / "paper.tar.gz", [("results/semeval/tm_gpu", None, "dir"), (RECORD, _committed(RECORD), "file"),
                                (log, _committed(log), "file")])
    _tar(out / "ablation.tar.gz", [(ABLATION, _committed(ABLATION), "file"),
                                   ("./benchmarks/results/campaign/paper_x.json", manifest, "file")])
    written = unpack(out, into=tree, say=quiet)
    assert written == sorted([RECORD, log, ABLATION, "benchmarks/results/campaign/paper_x.json"])
    for rel in (RECORD, log, ABLATION):
        assert (tree / rel).read_bytes() == _committed(rel)
    assert (tree / "benchmarks/results/campaign/paper_x.json").read_bytes() == manifest
    assert oct((tree / RECORD).stat().st_mode & 0o777) == "0o644"
    assert not list(tree.glob(STAGING + "*"))
    assert unpack(out, into=tree, say=quiet) == []  # identical files are left alone

    (tree / log).write_text("edited\n")
    assert "differs" in _refused(out, tree, "differs")
    assert unpack(out, into=tree, overwrite=True, say=quiet) == [log]
    assert (tree / log).read_bytes() == _committed(log)


@pytest.mark.parametrize("name,kind,match", [
    ("results/../../evil.json", "file", "outside the tree"),
    ("/tmp/evil.json", "file", "outside the tree"),
    ("results/x/seed0.json", "sym", "link"),
    ("src/asynctm/__init__.py", "file", "outside results/"),
])
def test_unsafe_members_are_refused(tmp_path, out, name, kind, match):
    _tar(out / "a.tar.gz", [("results/ok/seed0.log", b"{}", "file"), (name, b"x", kind)])
    _refused(out, tmp_path / "tree", match)
    assert not (tmp_path / "tree").exists()  # nothing written, not even the good member or the target folder


def test_the_cli_unpacks_and_says_what_to_run_next(tmp_path, out, capsys):
    _tar(out / "paper.tar.gz", [(RECORD, _committed(RECORD), "file")])
    assert main(["unpack", str(out), "--into", str(tmp_path / "tree")]) == 0
    assert "unpacked 1 file(s) from 1 tarball(s)" in capsys.readouterr().out
    assert (tmp_path / "tree" / RECORD).is_file()


# --- sizes ------------------------------------------------------------------------------------------------------

def _crafted(path: Path, header: tarfile.TarInfo, data: bytes = b"") -> Path:
    """A tarball whose one header says what ``header`` says (e.g. a huge size) followed by ``data`` alone."""
    raw = header.tobuf(format=tarfile.GNU_FORMAT) + data + b"\0" * (-len(data) % tarfile.BLOCKSIZE)
    path.write_bytes(gzip.compress(raw + b"\0" * (2 * tarfile.BLOCKSIZE)))
    return path


def test_a_member_claiming_a_huge_size_is_refused_before_its_data_is_read(tmp_path, out):
    info = tarfile.TarInfo("results/semeval/tm_gpu/p/seed0.log")
    info.size = 2**40  # a terabyte claimed by a tarball of a few hundred bytes
    _crafted(out / "paper.tar.gz", info, b"x" * 1000)
    message = _refused(out, tmp_path / "tree", "outside the limit of 0 to")
    assert "paper.tar.gz" in message and "seed0.log" in message and "ask the GPU host" in message


def test_a_tar_extension_header_larger_than_the_tarball_is_refused(tmp_path, out):
    """A pax header claiming 1 GiB in a tarball of a few hundred bytes: a damaged archive."""
    info = tarfile.TarInfo("././@PaxHeader")
    info.type, info.size = tarfile.XHDTYPE, 2**30
    _crafted(out / "paper.tar.gz", info)
    assert "paper.tar.gz" in _refused(out, tmp_path / "tree", "is not a tar archive or a damaged one")


def test_member_and_total_sizes_are_bounded_while_streaming(tmp_path, out, monkeypatch):
    monkeypatch.setattr(unpack_mod, "MAX_MEMBER_BYTES", 4096)
    monkeypatch.setattr(unpack_mod, "CHUNK_BYTES", 1024)  # the stream is decompressed in several chunks
    zeros = b"\0" * 5000  # a run of zeros: the kind of member that compresses to almost nothing
    _tar(out / "a.tar.gz", [("results/e/tm_gpu/p/seed0.log", b"ok", "file"),
                            ("results/e/tm_gpu/p/seed1.log", zeros, "file")])
    _refused(out, tmp_path / "tree", "seed1.log' claims 5000 bytes, outside the limit of 0 to 4096")

    monkeypatch.setattr(unpack_mod, "MAX_MEMBER_BYTES", 8192)
    monkeypatch.setattr(unpack_mod, "MAX_TOTAL_BYTES", 15000)  # each tarball expands to 10240 bytes (tar records)
    _tar(out / "b.tar.gz", [("results/e/tm_gpu/p/seed2.log", zeros, "file")])
    assert "one at a time" in _refused(out, tmp_path / "tree", "expand to more than 15000 bytes together")
    (out / "b.tar.gz").unlink()
    assert unpack(out, into=tmp_path / "tree", say=quiet) == ["results/e/tm_gpu/p/seed0.log",
                                                             "results/e/tm_gpu/p/seed1.log"]
    assert (tmp_path / "tree/results/e/tm_gpu/p/seed1.log").read_bytes() == zeros


def test_the_limits_are_far_above_every_committed_result():
    """The reason given for the bounds: no committed record, log, scores file or benchmark comes near them. Evidence
    records (results/evidence/*.json, built here from committed records, never packed on a GPU host) are not what
    the unpack tool brings back; the run records beneath results/evidence are."""
    evidence = REPO / "results" / "evidence"
    files = [p for d in ("results", "benchmarks/results") for p in (REPO / d).rglob("*")
             if p.is_file() and not (p.parent == evidence and p.suffix in (".json", ".yaml"))]
    assert files
    sizes = [p.stat().st_size for p in files]
    assert max(sizes) * 100 < unpack_mod.MAX_MEMBER_BYTES
    assert sum(sizes) * 10 < unpack_mod.MAX_TOTAL_BYTES


# --- names --------------------------------------------------------------------------------------------------------

def test_a_name_twice_in_one_tarball_is_refused(tmp_path, out):
    _tar(out / "paper.tar.gz", [(RECORD, _committed(RECORD), "file"), ("./" + RECORD, b"{}", "file")])
    assert "twice" in _refused(out, tmp_path / "tree", "paper.tar.gz: member .*seed0.json' is twice in it")


def test_a_name_in_two_tarballs_is_kept_once_and_a_different_copy_is_named(tmp_path, out):
    """Two steps of one lease may pack one file (a sweep point that is also the main setting): the same bytes are
    written once; a different later copy is left out, and the summary names it and its tarball."""
    _tar(out / "paper.tar.gz", [(RECORD, _committed(RECORD), "file")])
    _tar(out / "sweeps.tar.gz", [(RECORD, _committed(RECORD), "file")])
    assert unpack(out, into=tmp_path / "tree", say=quiet) == [RECORD]
    assert not list((tmp_path / "tree").glob(".unpack-staging-*"))
    other = json.loads(_committed(RECORD))
    other["final"]["accuracy"] = 12.5
    _tar(out / "sweeps.tar.gz", [(RECORD, json.dumps(other).encode(), "file")])
    said = []
    assert unpack(out, into=tmp_path / "tree2", say=said.append) == [RECORD]
    assert (tmp_path / "tree2" / RECORD).read_bytes() == _committed(RECORD)
    assert any("left out 1 later copies" in line and f"{RECORD} (sweeps.tar.gz)" in line for line in said), said


def test_a_non_canonical_seed_name_beside_a_committed_record_is_refused(tmp_path, out):
    tree = tmp_path / "tree"
    (tree / RECORD).parent.mkdir(parents=True)
    (tree / RECORD).write_bytes(_committed(RECORD))
    _tar(out / "paper.tar.gz", [(RECORD.replace("seed0.json", "seed00.json"), _committed(RECORD), "file")])
    message = _refused(out, tree, r"seed00\.json: file name: .*seed0\.json")
    assert message.startswith("paper.tar.gz: results/semeval/") and "nothing was written" in message


@pytest.mark.parametrize("edit,match,fix", [
    (lambda r: r["final"].update({next(iter(r["final"])): float("nan")}), "not a finite number",
     "fix: run the step again on the GPU host"),
    (lambda r: r.update(seed=3), "seed: the record says 3 but its path says 0", "fix: move it to the folder"),
])
def test_a_record_the_gate_refuses_is_not_unpacked(tmp_path, out, edit, match, fix):
    record = json.loads(_committed(ABLATION))
    edit(record)
    _tar(out / "ablation.tar.gz", [(ABLATION, json.dumps(record).encode(), "file"),
                                   (RECORD, _committed(RECORD), "file")])
    message = _refused(out, tmp_path / "tree", match)
    assert message.startswith(f"ablation.tar.gz: {ABLATION}: ") and fix in message


def test_smoke_records_are_checked_below_their_own_results_root(tmp_path, out):
    record = json.loads(_committed(RECORD))
    smoke = "results/smoke/" + RECORD.removeprefix("results/")
    _tar(out / "paper.tar.gz", [(smoke, json.dumps(record).encode(), "file")])
    assert unpack(out, into=tmp_path / "tree", say=quiet) == [smoke]  # the gate reads it as semeval/tm_gpu/...
    record["params"] = "n80_T15_s3.9_e5"
    _tar(out / "paper.tar.gz", [(smoke, json.dumps(record).encode(), "file")])
    _refused(out, tmp_path / "tree", "params: the record says 'n80_T15_s3.9_e5'", overwrite=True)


# --- files and folders ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("members,match", [
    ([("results/e/a", b"file", "file"), ("results/e/a/b.log", b"x", "file")], "needs a folder 'results/e/a'"),
    ([("results/e/a/b.log", b"x", "file"), ("results/e/a", b"file", "file")], "is a file, but .* puts a folder"),
    ([("results/e/a", b"file", "file"), ("results/e/a", None, "dir")], "is a folder, but .* holds a file"),
])
def test_a_file_folder_clash_in_the_tarballs_is_refused(tmp_path, out, members, match):
    _tar(out / "a.tar.gz", members)
    _refused(out, tmp_path / "tree", match)


def test_a_file_folder_clash_with_the_tree_is_refused_before_any_rename(tmp_path, out):
    tree = tmp_path / "tree"
    (tree / "results/e").mkdir(parents=True)
    (tree / "results/e/a").write_text("a file")  # where the tarball needs a folder
    (tree / "results/e/c.log").mkdir()  # where the tarball puts a file
    # the good members sort before the clashing ones: they would be renamed first if the checks came late
    _tar(out / "a.tar.gz", [("results/b/ok.log", b"ok", "file"), ("results/e/a/b.log", b"x", "file")])
    assert "move that file away" in _refused(out, tree, r"needs a folder where .*results/e/a is a file")
    (out / "a.tar.gz").unlink()
    _tar(out / "b.tar.gz", [("results/b/ok.log", b"ok", "file"), ("results/e/c.log", b"x", "file")])
    assert "move that folder away" in _refused(out, tree, r"is a file where .*results/e/c.log is a folder")


# --- damaged archives -------------------------------------------------------------------------------------------

def _valid_bytes(tmp_path) -> bytes:
    return _tar(tmp_path / "valid.tar.gz", [(RECORD, _committed(RECORD), "file"),
                                           ("results/e/tm_gpu/p/seed0.log", os.urandom(20000), "file")]).read_bytes()


def _second(tarball: bytes) -> int:
    """Where the second member's header starts in the uncompressed tar stream."""
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as tar:
        return tar.getmembers()[1].offset


@pytest.mark.parametrize("damage,match", [
    (lambda good: b"PK\x03\x04 not a gzip at all" * 10, "is not a gzip file"),
    (lambda good: good[: len(good) // 2], "is truncated"),
    (lambda good: good[:-4], "is truncated"),  # only the gzip trailer cut: every tar member still reads
    (lambda good: good[:-8] + bytes(8), "damaged compressed data"),  # the checksum wrong
    (lambda good: gzip.compress(b"plain text, not a tar archive\n" * 40), "not a tar archive"),
    # the tar cut at a header, then compressed whole: the gzip stream is sound, the archive is not
    (lambda good: gzip.compress(gzip.decompress(good)[:_second(good)]), "truncated .*after 1 entries, without its"),
    (lambda good: gzip.compress(gzip.decompress(good)[:_second(good) + 100]), "truncated .*after 1 entries"),
    (lambda good: gzip.compress(gzip.decompress(good)[:_second(good)] + b"garbage" * 300),
     "a damaged header after 1 entries"),
    (lambda good: gzip.compress(b""), "not a tar archive"),
])
def test_a_damaged_tarball_gives_one_line(tmp_path, out, damage, match):
    (out / "paper.tar.gz").write_bytes(damage(_valid_bytes(tmp_path)))
    _tar(out / "ablation.tar.gz", [(ABLATION, _committed(ABLATION), "file")])  # a good one beside it: not written
    message = _refused(out, tmp_path / "tree", match)
    assert message.startswith("paper.tar.gz ") and message.endswith("ask the GPU host for the step's tarball again")


def test_the_cli_prints_one_line_for_a_damaged_tarball(tmp_path, out, capsys):
    (out / "paper.tar.gz").write_bytes(_valid_bytes(tmp_path)[:-4])
    assert main(["unpack", str(out), "--into", str(tmp_path / "tree")]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    assert captured.err.count("\n") == 1 and captured.err.startswith("gpu_host unpack: paper.tar.gz is trunc")
    assert not (tmp_path / "tree").exists()


# --- benchmark JSON ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("data,match", [
    (b'{"settings": [', r"gpu_h100_abc\.json is not valid JSON \(line 1 column 15"),
    (b"[1, 2]", r"gpu_h100_abc\.json holds a JSON list, not an object"),
    (b"\xff\xfe{}", r"gpu_h100_abc\.json is not valid JSON"),
])
def test_a_malformed_benchmark_json_is_refused(tmp_path, out, data, match):
    _tar(out / "bench.tar.gz", [(RECORD, _committed(RECORD), "file"), ("benchmarks/results/gpu_h100_abc.json", data,
                                                                       "file")])
    assert "ask the GPU host" in _refused(out, tmp_path / "tree", match)


# --- the staging folder -----------------------------------------------------------------------------------------

def test_staging_is_beside_the_target_and_a_killed_runs_is_cleared(tmp_path, out, monkeypatch):
    tree = tmp_path / "tree"
    stale = tree / f"{STAGING}{_host()}-999999999-x"
    (stale / "results").mkdir(parents=True)  # left by a process that is gone
    seen = []
    real = unpack_mod._check_target

    def spy(into, rel, staged, tar_path, overwrite):
        seen.append(staged)
        return real(into, rel, staged, tar_path, overwrite)

    monkeypatch.setattr(unpack_mod, "_check_target", spy)
    _tar(out / "paper.tar.gz", [(RECORD, _committed(RECORD), "file")])
    assert unpack(out, into=tree, say=quiet) == [RECORD]
    assert seen and seen[0].parents[len(Path(RECORD).parts) - 1].parent == tree  # staged inside the target tree
    assert not list(tree.glob(STAGING + "*"))  # this run's staging removed, and the killed run's
