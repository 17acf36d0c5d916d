"""Glue for the Snakemake rules of workflow/rules/tables.smk, figures.smk, claims.smk, report.smk and ablation.smk
(kept here so that those files hold rules only): the records each artifact declares as its inputs, and what an
artifact's job does after its build (:func:`add_job_args`, :func:`finish_job`).

Every record an artifact reads is a declared input, so Snakemake rebuilds the artifact when one appears,
changes or goes: the records this configuration requests (on disk, or started by this invocation within the
budget), and every other record on disk under the results root for a cell the artifact reports (e.g. tm_gpu
records made on a GPU host and copied in, where this host has none and so requests none), as the record store
lists them (asynctm.store.record_files).
"""

from __future__ import annotations

import sys
from pathlib import Path

from .. import store
from ..jobs import JobLog, shell_word
from . import catalog


def records_on_disk(name: str, config: dict, results) -> list[str]:
    """The record files under ``results`` that artifact ``name`` reads (catalog.reads), whoever made them."""
    root = Path(results)
    return sorted(p.as_posix() for p in store.record_files(root, catalog.experiments(name, config), ablation=False)
                  if catalog.reads(name, config, p.relative_to(root)))


def declared_records(name: str, config: dict, record_paths, results) -> list[str]:
    """The records artifact ``name`` reads: of those the config requests (``record_paths``, from common.smk),
    the ones it uses, plus :func:`records_on_disk`."""
    requested = record_paths(experiments=catalog.experiments(name, config))
    return sorted({str(p) for p in requested if catalog.reads(name, config, p)}
                  | set(records_on_disk(name, config, results)))


def record_input(name: str, config: dict, record_paths, results):
    """A Snakemake input function giving :func:`declared_records` (evaluated when the DAG is built)."""

    def records(wildcards):
        return declared_records(name, config, record_paths, results)

    return records


def report_record_input(config: dict, record_paths, results):
    """The report's input function: the records of every table and figure (it gives the provenance of each)."""

    def records(wildcards):
        return sorted({p for name in catalog.ARTIFACTS for p in declared_records(name, config, record_paths, results)})

    return records


# -- artifacts follow their records, whatever the files' times ----------------------------------------------------
# Snakemake rebuilds an artifact when an input is newer than its outputs. A record copied with its old time
# (`cp -p`, a tarball) or one that went away changes no time, so each artifact also keeps a manifest of the
# records it was built from (`<tables>/inputs/<name>.sha256`: digest and path, one line each, committed beside
# the tables). Where the records on disk no longer give that manifest, the artifact's input gains a stamp
# (STAMP_DIR/<name>-<digest>) given the time of that moment: newer than the artifact, it rebuilds it, and the
# artifact's job removes it (:func:`remove_stamps`). The stamp lives in Snakemake's own state folder (.snakemake/,
# ignored by git, which Snakemake writes on any run, a dry run too); no file of the project is written while the
# workflow is read. (A stamp made by a rule instead, as a missing input, is not remade reliably: Snakemake leaves
# a missing input's job out where the consumer looks up to date by its times.)
STAMP_DIR = ".snakemake/asynctm-stale"
_DIGESTS: dict = {}


def _stamp(name: str, text: str) -> str:
    """The stamp of artifact ``name`` for this state (``text``), touched now."""
    import hashlib

    stamp = Path(STAMP_DIR) / f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.touch()
    return stamp.as_posix()


def _file_digest(path: Path) -> str:
    import hashlib

    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _DIGESTS:
        _DIGESTS[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return _DIGESTS[key]


def inputs_manifest_path(name: str, tables_dir) -> str:
    """Where artifact ``name`` keeps the manifest of the records it was built from."""
    return f"{tables_dir}/inputs/{name}.sha256"


def manifest_text(records) -> str:
    """The manifest of these record files: ``<sha256>  <path>`` per file on disk, sorted by path."""
    paths = sorted({str(p) for p in records if Path(p).is_file()})
    return "".join(f"{_file_digest(Path(p))}  {p}\n" for p in paths)


def write_inputs_manifest(path, records) -> None:
    from ..io import write_text_atomic

    write_text_atomic(path, manifest_text(records))


def stale_stamp(name: str, tables_dir, records: list[str]) -> list[str]:
    """``[stamp]`` where artifact ``name``'s manifest differs from what ``records`` give on disk now, else
    ``[]``."""

    manifest = Path(inputs_manifest_path(name, tables_dir))
    try:
        before = manifest.read_text()
    except FileNotFoundError:
        return []  # the manifest is one of the artifact's outputs: missing, it rebuilds the artifact anyway
    except OSError:
        before = None
    now = manifest_text(records)
    return [] if before == now else [_stamp(name, now)]


def changed_stamp(name: str, path, text: str) -> list[str]:
    """``[stamp]`` where the file ``path`` exists with other content than ``text`` (a rule then writes it anew),
    else ``[]`` (a missing file is made by its rule anyway)."""
    try:
        if Path(path).read_text() == text:
            return []
    except FileNotFoundError:
        return []
    except OSError:
        pass
    return [_stamp(name, text)]


def with_stamp(name: str, tables_dir, records_of):
    """A Snakemake input function (for ``unpack``): ``{"records": records_of(wildcards), "stale": [...]}``, the
    records listed once and their stamp from that same list (see :func:`stale_stamp`)."""

    def inputs(wildcards):
        records = records_of(wildcards)
        return {"records": records, "stale": stale_stamp(name, tables_dir, records)}

    return inputs


def record_input_with_stamp(name: str, config: dict, record_paths, results, tables_dir):
    """:func:`with_stamp` of artifact ``name``'s declared records (:func:`record_input`)."""
    return with_stamp(name, tables_dir, record_input(name, config, record_paths, results))


def remove_stamps(stamps) -> None:
    """Remove the stamps that asked for a rebuild, once it is done (a later change of the records makes a new one)."""
    for stamp in stamps:
        Path(stamp).unlink(missing_ok=True)


def artifact_command(name: str, results, out_dir, host_gpu: bool, reference: bool = True) -> str:
    """The shell command of the rule of table, figure or claims artifact ``name``: ``asynctm artifacts NAME`` on the
    rule's declared records (it reads those alone) below ``results``, writing into ``out_dir``, then the manifest of
    those records, and the stamps that asked for the build go (:func:`finish_job`). ``host_gpu`` words the gap of a
    missing tm_gpu run; ``reference``: the rule's input.reference, the paper's numbers."""
    return (f"asynctm artifacts {name} --results {shell_word(results)} --config {{input.config:q}} --out "
            f"{shell_word(out_dir)} --host-gpu {'yes' if host_gpu else 'no'}"
            + (" --reference {input.reference:q}" if reference else "")
            + " --inputs-manifest {output.inputs:q} --stale {input.stale:q} --log {log:q} --records {input.records:q}")


def add_job_args(parser) -> None:
    """The options of an artifact's command line that its rule's job passes (it also passes ``--records``)."""
    parser.add_argument("--inputs-manifest", default=None, metavar="FILE",
                        help="after the build, write the manifest of --records here (the workflow's)")
    parser.add_argument("--stale", nargs="*", default=[], metavar="STAMP",
                        help="the stamps that asked for this build, removed after it (the workflow's)")


def finish_job(args) -> None:
    """After a build: the manifest of the records it was built from (:func:`write_inputs_manifest`), then its
    stamps go (:func:`remove_stamps`)."""
    if args.inputs_manifest:
        write_inputs_manifest(args.inputs_manifest, args.records or [])
    remove_stamps(args.stale)


def run_logged(args, work, errors=(store.RecordError,), hint: str = "") -> int:
    """An artifact's job: ``work()`` builds and returns the files it wrote, each then a line on stdout and in
    ``--log``, and :func:`finish_job` follows. One of ``errors`` ends it with an ``error:`` line (and ``hint``,
    except after the record gate's line, which names its own fix) and exit status 1; anything else leaves its
    traceback in the log."""
    log = JobLog(args.log)
    try:
        written = work()
    except errors as exc:
        log(f"error: {exc}" + ("" if isinstance(exc, store.RecordError) else hint))
        return 1
    except Exception:
        log.traceback()
        raise
    for path in written:
        log(str(path), stream=sys.stdout)
    finish_job(args)
    return 0


def config_text(settings: dict) -> str:
    """The config an artifact is built from (``artifacts_config.yaml``, ``claims_config.yaml``) as written."""
    import yaml

    return yaml.safe_dump(settings, sort_keys=True)
