#!/usr/bin/env python
"""Does pyTsetlinMachine's release change its regression machine's run? Two installations side by side.

The paper's experiments ran in 2020, when pyTsetlinMachine 0.4.9 (December 2019) was the current release (0.6.0
came in May 2021); ours run 0.6.6. Each installation (a folder a ``pip install --target`` made, or ``venv`` for this
interpreter's own) trains, in a fresh process of its own, the regression machine of an experiment's main setting
(config/config.yaml) on its processed dataset for ``--epochs`` epochs: the peer the runner builds for the run
(``asynctm.experiments.run.make_tm_peer``, seed 0: the library's pcg32 stream at its start), driven as the runner
drives it (``prepare``, then ``fit_epoch`` and ``predict`` every epoch), and reports the test MAE after every epoch
as the run records compute it. The record says whether the installations gave the same run, epoch for epoch.

    pip install --no-deps --target /tmp/pytm049 pyTsetlinMachine==0.4.9   # a C compiler builds it
    python benchmarks/pytm_versions.py --site 0.4.9=/tmp/pytm049 --site 0.6.6=venv --epochs 10 \\
        --out benchmarks/results/pytm_versions_bike_sharing.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

_TRAIN = """
import json, os, sys
from asynctm.experiments.metrics import evaluate
from asynctm.experiments.run import load_dataset, make_tm_peer
from pyTsetlinMachine import tm
settings, epochs = json.loads(sys.argv[1]), int(sys.argv[2])
ds = load_dataset(sys.argv[3], settings)
peer = make_tm_peer(settings, None)
peer.prepare(ds.X_train, ds.y_train)
mae = []
for _ in range(epochs):
    peer.fit_epoch(ds.X_train, ds.y_train)
    mae.append(evaluate(settings["task"], ds.y_test, peer.predict(ds.X_test))[0]["mae"])
print(json.dumps({"version": peer.version(), "module": os.path.realpath(tm.__file__), "mae": mae}))
"""


def main(argv=None) -> int:
    import yaml

    from asynctm.experiments import plan
    from asynctm.io import write_json_atomic
    from asynctm.provenance import git_info, versions

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", action="append", required=True, help="LABEL=FOLDER (or LABEL=venv), two or more")
    ap.add_argument("--experiment", default="bike_sharing")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--data-dir", default="data")
    ap.add_argument("--config", default="config/config.yaml")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    config = yaml.safe_load(Path(args.config).read_text(encoding="utf-8"))
    params = plan.main_params(config, args.experiment, "pytm_nonindexed")
    settings = plan.tm_run_settings(config, args.experiment, "pytm_nonindexed", params, 0)
    if settings["task"] != "regression":
        print(f"error: --experiment {args.experiment} is not a regression experiment; name one", file=sys.stderr)
        return 1
    runs = {}
    for item in args.site:
        label, _, folder = item.partition("=")
        if not folder or (folder != "venv" and not Path(folder).is_dir()):
            print(f"error: --site {item!r}: expected LABEL=FOLDER (an existing folder) or LABEL=venv", file=sys.stderr)
            return 1
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            ([] if folder == "venv" else [str(Path(folder).resolve())]) + [str(REPO / "src")]))
        done = subprocess.run([sys.executable, "-c", _TRAIN, json.dumps(settings), str(args.epochs), args.data_dir],
                              env=env, capture_output=True, text=True, check=True)
        runs[label] = {"site": folder, **json.loads(done.stdout.splitlines()[-1])}
        print(f"{label}: pyTsetlinMachine {runs[label]['version']}, MAE after each epoch {runs[label]['mae']}",
              file=sys.stderr)
    curves = [tuple(r["mae"]) for r in runs.values()]
    git = git_info()
    write_json_atomic(args.out, {
        "question": "Does pyTsetlinMachine's release change its regression machine's run?",
        "experiment": args.experiment, "params": params, "seed": 0, "epochs": args.epochs,
        "hyperparameters": settings["hyperparameters"], "runs": runs, "same_run": len(set(curves)) == 1,
        "provenance": {"git_commit": git["commit"], "git_dirty": git["tracked_files_modified"],
                       "packages": versions(),
                       "command": "python benchmarks/pytm_versions.py " + " ".join(argv or sys.argv[1:])}})
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
