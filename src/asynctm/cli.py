"""One command for every stage of the pipeline: ``asynctm <subcommand> [arguments]`` (or ``python -m asynctm``).

Each subcommand is the command line of one module; ``asynctm <subcommand> --help`` shows its arguments,
``asynctm --help`` lists them. Every rule of the workflow is a ``shell:`` rule calling one of them with ``--log LOG``:
given a log, the subcommand runs as a job (asynctm.jobs.run_job: nothing starts once the workflow's deadline has
passed, a failure ends with one line naming the log), and ``asynctm run tm`` pauses a margin before that deadline
(its ``--stop-at``). The library (``TMClassifier``, ``TMRegressor``) needs
none of this; the subcommands need the pipeline's dependencies (``pip install 'asynctm[pipeline]'``).
"""

from __future__ import annotations

import importlib
import sys

from . import jobs

# subcommand -> (module whose main(argv) it runs, what it does)
SUBCOMMANDS = {
    "data": ("asynctm.datasets.__main__", "fetch, verify and prepare the datasets"),
    "run": ("asynctm.experiments.__main__", "one run (tm, svm, mlp) and the plan of all runs (plan)"),
    "store": ("asynctm.store.__main__", "check run records against the record gate; the schema page"),
    "artifacts": ("asynctm.artifacts.__main__", "one table, figure or the claims page from the records"),
    "ablation": ("asynctm.artifacts.ablation", "the tally ablation's table and figures"),
    "report": ("asynctm.artifacts.report", "the HTML report of the records"),
    "evidence": ("asynctm.artifacts.evidence", "evidence records for the gaps to the paper, and their tables"),
    "evidence-cost": ("asynctm.artifacts.evidence_cost", "what the paper's Table 4 times imply (cost model)"),
    "evidence-novelty": ("asynctm.artifacts.evidence_novelty", "the novelty MLP stage and the TMs' convergence"),
    "evidence-split": ("asynctm.artifacts.evidence_split", "accuracy over other train/test splits of the same rows"),
    "evidence-implied": ("asynctm.artifacts.evidence_implied", "the pyTM epoch each of the paper's speed-ups implies"),
    "evidence-errors": ("asynctm.artifacts.evidence_errors", "the error split each accuracy and F1 pair implies"),
}


def usage() -> str:
    width = max(map(len, SUBCOMMANDS))
    lines = ["usage: asynctm <subcommand> [arguments]   (asynctm <subcommand> --help: its arguments)", "",
             "subcommands:"]
    lines += [f"  {name:<{width}}  {what}" for name, (_, what) in SUBCOMMANDS.items()]
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"asynctm: unknown subcommand {name!r}; choose one of {', '.join(SUBCOMMANDS)} (asynctm --help)",
              file=sys.stderr)
        return 2
    module_name = SUBCOMMANDS[name][0]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        print(f"asynctm {name}: needs {exc.name!r}, a dependency of the pipeline; install it with "
              "pip install 'asynctm[pipeline]'", file=sys.stderr)
        return 1
    log = _log_arg(rest)
    if log is None:
        sys.argv = [f"asynctm {name}", *rest]
        return module.main(rest)
    if name == "run" and rest[:1] == ["tm"] and not any(a.split("=")[0] == "--stop-at" for a in rest):
        rest += jobs.stop_at_args()
    sys.argv = [f"asynctm {name}", *rest]  # a run's record keeps its command (provenance)
    what = f"asynctm {name}" + (f" {rest[0]}" if rest and not rest[0].startswith("-") else "")
    return jobs.run_job(what, module.main, rest, log)


def _log_arg(argv: list[str]) -> str | None:
    """The value of ``--log`` in ``argv``; None without one."""
    for k, arg in enumerate(argv):
        if arg == "--log" and k + 1 < len(argv):
            return argv[k + 1]
        if arg.startswith("--log="):
            return arg.removeprefix("--log=")
    return None
