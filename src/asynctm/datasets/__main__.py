"""Command line for the data layer (the Snakemake data rules run it, one process per job).

    python -m asynctm.datasets list
    python -m asynctm.datasets fetch NAME --raw-dir data/raw/NAME [--mirror DIR] [--log FILE]
    python -m asynctm.datasets prepare NAME --protocol paper --raw-dir data/raw/NAME \\
        --out data/processed/NAME/paper [--log FILE]
    python -m asynctm.datasets hash PATH...     # sha256 of files, folder digest of folders

``hash`` prints what a dataset module's ``RawFile``/``RawFolder`` declarations need.
Exit status 0 on success, 1 with a one-paragraph ``error:`` message on stderr (and in the log).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..jobs import JobLog


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m asynctm.datasets", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the registered dataset names and their protocols")
    f = sub.add_parser("fetch", help="bring a dataset's raw files into --raw-dir and verify them")
    f.add_argument("name")
    f.add_argument("--raw-dir", required=True, help="the dataset's raw folder, e.g. data/raw/bike_sharing")
    f.add_argument("--mirror", default=None, help="an offline mirror folder (the pipeline's data_mirror)")
    f.add_argument("--timeout", type=float, default=60.0, help="seconds per network operation")
    f.add_argument("--log", default=None)
    r = sub.add_parser("prepare", help="verify the raw files and write the processed dataset")
    r.add_argument("name")
    r.add_argument("--protocol", default="paper")
    r.add_argument("--raw-dir", required=True)
    r.add_argument("--out", required=True, help="output folder, e.g. data/processed/bike_sharing/paper")
    r.add_argument("--log", default=None)
    h = sub.add_parser("hash", help="sha256 of files / folder digest of folders, for declarations")
    h.add_argument("paths", nargs="+")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    log = JobLog(getattr(args, "log", None))
    from ..io import is_disk_full
    from . import DATASETS, get_module, prepare_dataset
    from .base import folder_digest, sha256_file
    from .fetch import FetchError, fetch

    try:
        if args.command == "list":
            for name in DATASETS:
                try:
                    protocols = ", ".join(get_module(name).PROTOCOLS)
                except ImportError as e:
                    protocols = f"(not importable: {e})"
                print(f"{name}\t{protocols}")
        elif args.command == "hash":
            for p in map(Path, args.paths):
                print(f"{folder_digest(p) if p.is_dir() else sha256_file(p)}  {p}")
        elif args.command == "fetch":
            log(f"fetch {args.name} into {args.raw_dir}" + (f" (mirror {args.mirror})" if args.mirror else ""))
            fetch(args.name, args.raw_dir, args.mirror, timeout=args.timeout, log=log)
        elif args.command == "prepare":
            log(f"prepare {args.name} --protocol {args.protocol} from {args.raw_dir} into {args.out}")
            meta = prepare_dataset(args.name, args.raw_dir, args.protocol, args.out)
            log(f"wrote {meta}")
    except (FetchError, ValueError, FileNotFoundError) as e:
        log(f"error: {e}")
        return 1
    except OSError as e:
        if not is_disk_full(e):
            log.traceback()
            raise
        where = getattr(args, "out", None) or getattr(args, "raw_dir", None)
        log(f"error: the disk is full (no space left while writing {e.filename or where}): free space there, "
            "or set data_dir to a folder on another disk, and rerun")
        return 1
    except Exception:
        log.traceback()
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
