# Shared helpers for the .smk files: config lookups and the bridge to the package's data CLI.
import subprocess
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

DATA = config["data_dir"]
DATASET_NAMES = list(config["datasets"])
PROTOCOLS = {name: config["protocols"].get(name, ["paper"]) for name in DATASET_NAMES}
PROTOCOL_NAMES = sorted({p for ps in PROTOCOLS.values() for p in ps})

if config["data_mirror"] is not None and not Path(config["data_mirror"]).is_dir():
    raise WorkflowError(
        f"config data_mirror={config['data_mirror']!r} is not a folder (relative paths start at the "
        "working directory); fix it, or leave data_mirror unset to download from the official URLs"
    )


def processed_datasets():
    """The meta.json of every configured dataset and protocol (each marks a finished folder)."""
    return [
        f"{DATA}/processed/{name}/{protocol}/meta.json"
        for name, protocols in PROTOCOLS.items()
        for protocol in protocols
    ]


def datasets_cli(*args, log):
    """Run `python -m asynctm.datasets ARGS` (this interpreter) as its own process, so jobs run in
    parallel; its stdout and stderr, tracebacks included, go to the job's log."""
    with open(log, "w") as f:
        done = subprocess.run([sys.executable, "-m", "asynctm.datasets", *map(str, args)], stdout=f, stderr=f)
    if done.returncode != 0:
        raise WorkflowError(f"asynctm.datasets {args[0]} {args[1]} failed; see {log}")


def mirror_args():
    """The fetch CLI's mirror option; the pipeline reaches a mirror only through config."""
    return [] if config["data_mirror"] is None else ["--mirror", config["data_mirror"]]

