"""Evidence on the paper's accuracy and F1 pairs: can the two numbers of one cell describe one set of predictions on
the test set, and which split of the errors between the two classes does the pair imply, beside the splits of every
epoch of our runs? An evidence record as :mod:`asynctm.artifacts.evidence` (schema, kind, name, question,
provenance; rendered by its ``render`` command), of kind ``error_split``.

On a two-class test set with ``n1`` rows of class index 1 and ``n0`` of class 0, an accuracy ``A`` leaves
``E = N (1 - A)`` errors: ``b`` misses of class 1 (false negatives) and ``E - b`` misses of class 0 (false
positives). Every F1 is then a function of ``b`` alone::

    F1 of class 1 = 2 (n1 - b) / (2 (n1 - b) + E)
    F1 of class 0 = 2 (n0 - E + b) / (2 (n0 - E + b) + E)
    macro F1      = their mean

The F1 of one class is monotone in ``b``, so a pair (accuracy, F1) fixes ``b``; the macro F1 is concave in ``b``, so
a pair fixes it up to two values. Where no ``b`` gives the F1 at that accuracy, the two numbers cannot both describe
the same predictions. The paper does not say which F1 it reports, so each pair is read under all three. The paper's
numbers are means over five runs: they are read as one run's numbers, and again at its F1 plus and minus its standard
deviation, to show how far the reading moves.

Our run records hold the accuracy and both F1s of every epoch, so each epoch's split is read exactly: ``b`` from the
accuracy and the F1 of class 1, checked against the macro F1 and against whole counts (a record whose numbers do not
fit the test set's class counts stops the build). The share of the errors that are misses of class 1, ``b / E``, is
what the table compares: per implementation, the last-10-epoch mean over the seeds and the range over all epochs.

    python -m asynctm.artifacts.evidence_errors --data-dir data --results results \\
        --out results/evidence/accuracy_f1_pairs.json [--experiments imdb semeval wsd_apple wsd_java]

Bad input (a missing dataset or record, an experiment that is not a two-class classification, a record whose
metrics do not fit its test set) stops with one line naming the file or field and the fix, and writes nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from .evidence_common import (
    HEADER,
    LAST,
    NOT_TM,
    SCHEMA,
    EvidenceError,
    _mean_sd,
    _pm,
    check_out,
    main_params,
    read_config,
    read_reference,
    reading_experiment,
    run_command,
    setting_records,
    write_record,
)
from .evidence_common import provenance as _provenance
from .render import dataset_label

NAME = "accuracy_f1_pairs"
DEFAULT_REFERENCE = Path("paper_tables/reference/paper_numbers.csv")
EXPERIMENTS = ("imdb", "semeval", "wsd_apple", "wsd_java")
KINDS = ("class1", "class0", "macro")  # which F1: of class index 1, of class index 0, their mean
KIND_WORDS = {"class1": "F1 of class 1", "class0": "F1 of class 0", "macro": "macro F1"}
CONFIG_KIND = {"binary": "class1", "macro": "macro"}  # config experiments.<name>.f1 -> the kind read here
GRID = 20001  # points of the error split on which the macro F1's roots are bracketed before bisection
TOLERANCE = 1e-6  # how far a record's recovered counts may lie from whole numbers, and its F1s from each other


def f1_at(kind: str, b, errors: float, n1: int, n0: int):
    """The F1 (fraction) of ``kind`` when ``errors`` errors split into ``b`` misses of class 1 and the rest of
    class 0 (module docstring); ``b`` may be an array."""
    b = np.asarray(b, dtype=float)
    tp, tn = n1 - b, n0 - (errors - b)
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(2 * tp + errors > 0, 2 * tp / (2 * tp + errors), 1.0)
        f0 = np.where(2 * tn + errors > 0, 2 * tn / (2 * tn + errors), 1.0)
    return {"class1": f1, "class0": f0, "macro": (f1 + f0) / 2}[kind]


def split_bounds(errors: float, n1: int, n0: int) -> tuple[float, float]:
    """The misses of class 1 that ``errors`` errors allow: at least those class 0 cannot hold, at most n1."""
    return max(0.0, errors - n0), min(float(errors), float(n1))


def f1_range(kind: str, accuracy: float, n1: int, n0: int) -> list[float]:
    """[lowest, highest] F1 (%) of ``kind`` over every split of the errors that accuracy ``accuracy`` (%) leaves."""
    errors = (n1 + n0) * (1 - accuracy / 100)
    lo, hi = split_bounds(errors, n1, n0)
    ends = f1_at(kind, np.array([lo, hi]), errors, n1, n0)  # concave in b: lowest at an end, highest at its peak
    return [100 * float(ends.min()), 100 * float(f1_at(kind, _argmax(kind, lo, hi, errors, n1, n0), errors, n1, n0))]


def half_unit(x: float) -> float:
    """Half a unit in the last decimal of ``x`` as the paper printed it (read from its shortest repr, so a printed
    trailing zero widens it tenfold: the reading errs towards "possible")."""
    text = repr(float(x))
    decimals = len(text.split(".")[1]) if "." in text and "e" not in text else 0
    return 0.5 * 10.0 ** -decimals


def possible_within_rounding(kind: str, accuracy: float, f1: float, n1: int, n0: int) -> bool:
    """Whether some accuracy and F1 that round to the printed ``accuracy`` and ``f1`` (both %) hold together under
    ``kind``: the F1 interval of the rounding meets the F1 range of some accuracy of its rounding."""
    da, df = half_unit(accuracy), half_unit(f1)
    ranges = [f1_range(kind, a, n1, n0) for a in np.linspace(accuracy - da, accuracy + da, 5)]
    return f1 + df >= min(r[0] for r in ranges) and f1 - df <= max(r[1] for r in ranges)


def _argmax(kind: str, lo: float, hi: float, errors: float, n1: int, n0: int) -> float:
    """The misses of class 1 in [lo, hi] at which the F1 of ``kind`` peaks (each is concave in them: the F1 of a
    class through an affine map of a concave function, the macro F1 as their mean), by ternary search."""
    for _ in range(200):
        m1, m2 = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        if f1_at(kind, m1, errors, n1, n0) < f1_at(kind, m2, errors, n1, n0):
            lo = m1
        else:
            hi = m2
    return (lo + hi) / 2


def _bisect(f, a: float, c: float) -> float:
    """A root of ``f`` between ``a`` and ``c``, where ``f`` changes sign, by 100 halvings."""
    fa = f(a)
    for _ in range(100):
        m = (a + c) / 2
        fm = f(m)
        if (fm < 0) == (fa < 0):
            a, fa = m, fm
        else:
            c = m
    return (a + c) / 2


def implied_shares(kind: str, accuracy: float, f1: float, n1: int, n0: int) -> list[float]:
    """The shares of the errors that are misses of class 1 (``b / E``) at which accuracy ``accuracy`` and F1 ``f1``
    (both %) of ``kind`` hold together: one for the F1 of a class, up to two for the macro F1, none where no split of
    the errors gives that F1 at that accuracy."""
    n = n1 + n0
    errors = n * (1 - accuracy / 100)
    if errors <= 0:
        return []
    lo, hi = split_bounds(errors, n1, n0)
    if lo > hi:
        return []
    target = f1 / 100
    grid = np.linspace(lo, hi, GRID)
    gap = f1_at(kind, grid, errors, n1, n0) - target
    exact = np.abs(gap) <= 1e-12  # a root on the grid (the ends included, where a class has no misses)
    roots = [float(x) for x in grid[exact]]
    peak = _argmax(kind, lo, hi, errors, n1, n0)  # every F1 here is concave in b: a root may touch its peak
    if abs(float(f1_at(kind, peak, errors, n1, n0)) - target) <= 1e-9:
        roots.append(peak)
    for i in np.flatnonzero((np.sign(gap[:-1]) * np.sign(gap[1:]) < 0) & ~exact[:-1] & ~exact[1:]):
        roots.append(_bisect(lambda b: float(f1_at(kind, b, errors, n1, n0)) - target, float(grid[i]),
                             float(grid[i + 1])))
    shares = sorted({round(r / errors, 6) for r in roots})
    return [s for i, s in enumerate(shares) if i == 0 or s - shares[i - 1] > 1e-4]


def accuracy_at(kind: str, f1: float, share: float, n1: int, n0: int) -> float | None:
    """The accuracy (%) at which the F1 ``f1`` (%) of ``kind`` holds when a ``share`` of the errors are misses of
    class 1 (None where no error count gives it): the F1 falls as the errors grow at a fixed share, so bisection."""
    n, target = n1 + n0, f1 / 100

    def gap(errors):
        return float(f1_at(kind, share * errors, errors, n1, n0)) - target

    most = min(float(n), n1 / share if share > 0 else float(n), n0 / (1 - share) if share < 1 else float(n))
    if gap(most) > 0 or gap(0.0) < 0:
        return None
    return 100 * (1 - _bisect(gap, 0.0, most) / n)


def accuracy_over_shares(kind: str, f1: float, lo: float, hi: float, n1: int, n0: int) -> list[float] | None:
    """[lowest, highest] accuracy (%) at which the F1 ``f1`` (%) of ``kind`` holds for an error split with a share of
    misses of class 1 in [lo, hi] (our runs' range): what the F1 alone says of the accuracy; None where none."""
    values = [a for a in (accuracy_at(kind, f1, s, n1, n0) for s in np.linspace(lo, hi, 201)) if a is not None]
    return [min(values), max(values)] if values else None


def epoch_split(epoch: dict, n1: int, n0: int, where: str) -> float | None:
    """The share of one epoch's errors that are misses of class 1, read exactly from its accuracy and F1 of class 1
    (None for an epoch without errors); its macro F1 and whole counts check the reading."""
    n = n1 + n0
    try:
        accuracy, f1b, f1m = (float(epoch[k]) / 100 for k in ("accuracy", "f1_binary", "f1_macro"))
    except (KeyError, TypeError, ValueError) as exc:
        raise EvidenceError(f"{where}: an epoch lacks {exc} (accuracy, f1_binary, f1_macro); rerun this run") from None
    errors = n * (1 - accuracy)
    if round(errors) == 0:
        return None
    tp = f1b * errors / (2 * (1 - f1b)) if f1b < 1 else float(n1)
    b = n1 - tp
    f0 = float(f1_at("class0", b, errors, n1, n0))
    if (abs(errors - round(errors)) > TOLERANCE * n or abs(b - round(b)) > 1e-3 or not -1e-3 <= b <= errors + 1e-3
            or abs((f1b + f0) / 2 - f1m) > TOLERANCE):
        raise EvidenceError(f"{where}: epoch {epoch.get('epoch')}'s accuracy and F1s do not fit a test set of {n1} "
                            f"rows of class 1 and {n0} of class 0; the record is of another preparation: rerun it")
    return min(max(b, 0.0), errors) / errors


def _test_counts(data_dir, config: dict, config_path, experiment: str) -> dict:
    """The class counts of ``experiment``'s test set (its processed dataset) and its F1 reading in the config."""
    from ..datasets.base import load_processed

    with reading_experiment(config_path, experiment):
        exp = config["experiments"][experiment]
        dataset, protocol, task, f1 = exp["dataset"], exp["protocol"], exp["task"], exp["f1"]
    if task != "classification":
        raise EvidenceError(f"--experiments {experiment}: its task is {task}; the error split is read for "
                            "classification experiments")
    folder = Path(data_dir) / "processed" / dataset / protocol
    if not (folder / "meta.json").is_file():
        raise EvidenceError(f"{folder}/meta.json is missing: prepare the dataset first "
                            f"(snakemake --cores all {folder}/meta.json)")
    ds = load_processed(folder)
    classes = np.unique(ds.y_test)
    if set(classes.tolist()) - {0, 1}:
        raise EvidenceError(f"{folder}: the test set has classes {classes.tolist()}; the error split is read for "
                            "two-class test sets (0 and 1)")
    return {"dataset": dataset, "protocol": protocol, "f1_in_config": f1, "kind": CONFIG_KIND[f1],
            "n_test": int(len(ds.y_test)), "n1": int((ds.y_test == 1).sum()), "n0": int((ds.y_test == 0).sum()),
            "class_names": list(ds.class_names or [])}


def _paper_pairs(frame, dataset: str, n1: int, n0: int) -> list[dict]:
    """Each implementation of the paper with an accuracy and an F1 on ``dataset``: the pair, and per F1 reading the
    F1 range at that accuracy and the implied shares at F1, F1 - sd and F1 + sd."""
    out = []
    rows = frame[frame["dataset"] == dataset]
    for impl in sorted(set(rows["implementation"])):
        got = {r.metric: r for r in rows[rows["implementation"] == impl].itertuples()}
        if "accuracy" not in got or "f1" not in got:
            continue
        acc, f1 = float(got["accuracy"].mean), float(got["f1"].mean)
        sd = float(got["f1"].std) if got["f1"].std == got["f1"].std else 0.0
        readings = {kind: {"f1_range": f1_range(kind, acc, n1, n0),
                           "shares": implied_shares(kind, acc, f1, n1, n0),
                           "possible_within_rounding": possible_within_rounding(kind, acc, f1, n1, n0),
                           "shares_at_f1_minus_sd": implied_shares(kind, acc, f1 - sd, n1, n0),
                           "shares_at_f1_plus_sd": implied_shares(kind, acc, f1 + sd, n1, n0)} for kind in KINDS}
        out.append({"implementation": impl, "accuracy": [acc, float(got["accuracy"].std)], "f1": [f1, sd],
                    "source": got["f1"].source, "error_rate": 100 - acc, "readings": readings})
    return out


def _our_splits(results: Path, experiment: str, params_of, n1: int, n0: int) -> list[dict]:
    """Per implementation of our records of the main setting (``params_of(impl)``: its params folder, which a
    reduced protocol may cut): the share of misses of class 1 per run (its last-10 mean), over the seeds, and its
    range over every epoch of every run."""
    impls_of: dict[str, set] = {}  # params folder -> the implementations whose main setting it is
    for impl in (p.name for p in (results / experiment).glob("*") if p.is_dir() and p.name not in NOT_TM):
        impls_of.setdefault(params_of(impl), set()).add(impl)
    out = []
    for params, impls in impls_of.items():  # each folder's records read once, through the gate
        for row, recs in setting_records(results, experiment, params):
            if row["impl"] not in impls:
                continue
            per_run, every, last, f1 = [], [], [], []
            for path, rec in recs:
                n_test = int(rec["dataset"]["n_test"])
                if n_test != n1 + n0:
                    raise EvidenceError(f"{path}: field 'dataset.n_test' is {n_test}, but the prepared test set has "
                                        f"{n1 + n0} rows; prepare the data the record was run on, or rerun it")
                shares = [s for s in (epoch_split(e, n1, n0, str(path)) for e in rec["epochs"]) if s is not None]
                every += shares
                per_run.append(float(np.mean(shares[-LAST:])))
                last.append(float(np.mean([e["accuracy"] for e in rec["epochs"][-LAST:]])))
                f1.append(float(np.mean([e["f1"] for e in rec["epochs"][-LAST:]])))
            out.append({**{k: row[k] for k in ("impl", "records", "paths", "sha256")}, "params": params,
                        "accuracy": _mean_sd(last), "f1": _mean_sd(f1), "share_last10": _mean_sd(per_run),
                        "share_range": [min(every), max(every)], "epochs_read": len(every)})
    if not out:
        raise EvidenceError(f"{results / experiment}: no records of the main setting; run them first")
    return sorted(out, key=lambda o: o["impl"])


def _judge(reading: dict, lo: float, hi: float) -> str:
    """Where a paper pair's implied shares stand against the range of our epochs."""
    shares = reading["shares"]
    if not reading["possible_within_rounding"]:
        return "impossible"
    if not shares:
        return "possible only within the rounding"
    return "inside" if any(lo <= s <= hi for s in shares) else "outside"


def build_error_split(data_dir, results, reference=DEFAULT_REFERENCE, experiments=EXPERIMENTS,
                      config="config/config.yaml") -> dict:
    """The ``error_split`` evidence record (module docstring)."""
    results = Path(results)
    cfg = read_config(config)
    frame = read_reference(reference, "; pass --reference paper_tables/reference/paper_numbers.csv")
    rows = []
    for experiment in experiments:
        counts = _test_counts(data_dir, cfg, config, experiment)
        params = main_params(cfg, config, experiment)
        ours = _our_splits(results, experiment, lambda impl, e=experiment: main_params(cfg, config, e, impl),
                           counts["n1"], counts["n0"])
        lo, hi = min(o["share_range"][0] for o in ours), max(o["share_range"][1] for o in ours)
        paper = _paper_pairs(frame, counts["dataset"], counts["n1"], counts["n0"])
        for p in paper:
            p["against_ours"] = {kind: _judge(p["readings"][kind], lo, hi) for kind in KINDS}
            for kind in KINDS:
                p["readings"][kind]["accuracy_at_our_shares"] = accuracy_over_shares(
                    kind, p["f1"][0], lo, hi, counts["n1"], counts["n0"])
        rows.append({"experiment": experiment, **counts, "main_params": params, "ours": ours,
                     "ours_share_range": [lo, hi], "epochs_read": sum(o["epochs_read"] for o in ours),
                     "the_paper": paper})
    return {"schema": SCHEMA, "kind": "error_split", "name": NAME,
            "question": "Can each of the paper's accuracy and F1 pairs on a two-class test set describe one set of "
                        "predictions, and how would it split its errors between the two classes, beside the splits "
                        "of every epoch of our runs?",
            "provenance": _provenance("the paper's accuracy and F1 pairs read against the test sets' class counts and "
                                      "our run records' per-epoch metrics", None, (Path(__file__),),
                                      "asynctm.artifacts.evidence_errors"),
            "kinds": {k: KIND_WORDS[k] for k in KINDS}, "rows": rows}


def _accuracies(span) -> str:
    return "none" if span is None else f"{span[0]:.2f}-{span[1]:.2f}"


def _shares(shares: list[float]) -> str:
    return "none" if not shares else " or ".join(f"{100 * s:.0f} %" for s in shares)


def render_error_split(ev: dict, source: str) -> str:
    md = [HEADER.format(source=source), "", f"#### Evidence (accuracy and F1): {ev['question']}", "",
          "Share of the errors that are misses of class 1 (false negatives; the rest are misses of class 0). The "
          "paper's pairs are read under the F1 the configuration takes for the experiment (config "
          "experiments.<name>.f1: binary = F1 of class 1), and our F1 column is that F1 too; our splits are read "
          "exactly from each epoch's accuracy and F1 of class 1.", "",
          "| data (test rows: class 1 / class 0) | source | accuracy | F1 | errors (% of rows) | misses of class 1, "
          "share of the errors | at F1 ± sd | against every epoch of ours | accuracy its F1 gives at our splits |",
          "|---|---|---:|---:|---:|---:|---|---|---|"]
    for row in ev["rows"]:
        label = (f"{dataset_label(row['experiment'])} ({row['n1']:,} / {row['n0']:,})")
        kind = row["kind"]
        lo, hi = row["ours_share_range"]
        for p in row["the_paper"]:
            r = p["readings"][kind]
            md.append(f"| {label} | paper, {p['implementation']} ({KIND_WORDS[kind]}) | {_pm(p['accuracy'])} | "
                      f"{_pm(p['f1'])} | {p['error_rate']:.2f} | {_shares(r['shares'])} | "
                      f"{_shares(r['shares_at_f1_minus_sd'])} to {_shares(r['shares_at_f1_plus_sd'])} | "
                      f"**{p['against_ours'][kind]}** | {_accuracies(r['accuracy_at_our_shares'])} |")
        for o in row["ours"]:
            share = [None if v is None else 100 * v for v in o["share_last10"]]
            md.append(f"| {label} | ours, {o['impl']} ({o['params']}, {o['records']} runs) | {_pm(o['accuracy'])} | "
                      f"{_pm(o['f1'])} | {100 - o['accuracy'][0]:.2f} | {_pm(share, 0)} % | – | "
                      f"every epoch: {100 * o['share_range'][0]:.0f}-{100 * o['share_range'][1]:.0f} % "
                      f"({o['epochs_read']} epochs) | |")
        md.append(f"| {label} | **ours, every epoch of every run** | | | | "
                  f"**{100 * lo:.0f}-{100 * hi:.0f} %** | | {row['epochs_read']} epochs | |")
    md += ["", "Under each reading of the F1 (the paper does not say which it reports): the F1 the paper's accuracy "
           "allows (lowest to highest over every split of its errors); the shares of misses of class 1 at which the "
           "paper's F1 holds (\"none\": no split of the errors gives that F1 at that accuracy); and where those "
           "shares stand against every epoch of ours:", "",
           "| data | paper's implementation | accuracy | F1 | " + " | ".join(
               f"{ev['kinds'][k]}: range; share" for k in ev["kinds"]) + " |",
           "|---|---|---:|---:|" + "---|" * len(ev["kinds"])]
    for row in ev["rows"]:
        for p in row["the_paper"]:
            cells = [f"{r['f1_range'][0]:.2f}-{r['f1_range'][1]:.2f}; {_shares(r['shares'])}; "
                     f"{p['against_ours'][k]}" for k, r in ((k, p["readings"][k]) for k in ev["kinds"])]
            md.append(f"| {dataset_label(row['experiment'])} | {p['implementation']} | {p['accuracy'][0]:.2f} | "
                      f"{p['f1'][0]:.2f} | " + " | ".join(cells) + " |")
    md += ["", "Accuracy, F1 and errors in %; ours: mean ± sample standard deviation (ddof=1) over the seeds of each "
           f"run's last-{LAST}-epoch mean. The paper's numbers are means over five runs, read here as one run's; "
           "\"at F1 ± sd\" reads them again at the paper's F1 minus and plus its standard deviation. inside / "
           "outside: whether a share the paper's pair implies lies within the range of every epoch of our runs on "
           "that test set; impossible: no split of the errors gives the pair, even for numbers that round to the "
           "printed ones (half a unit in their last printed decimal); possible only within the rounding: none gives "
           "the printed pair, some gives a pair that rounds to it. The accuracy its F1 gives at our splits: the "
           "accuracies at which the paper's F1 holds for a share of misses of class 1 within the range of our epochs. "
           "The class counts are those of the pipeline's test set (results/README.md); where the paper's test rows "
           "differ (SemEval's split), its pairs are read on ours. Nothing here is fitted or chosen.", ""]
    return "\n".join(md)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m asynctm.artifacts.evidence_errors",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", required=True, help="the data folder (processed/<dataset>/<protocol>/)")
    ap.add_argument("--results", required=True)
    ap.add_argument("--out", required=True, help=f"the evidence record, named {NAME}.json")
    ap.add_argument("--experiments", nargs="+", default=list(EXPERIMENTS))
    ap.add_argument("--config", default="config/config.yaml")
    ap.add_argument("--reference", default=str(DEFAULT_REFERENCE))
    return run_command(_command, ap.parse_args(argv))


def _command(args) -> None:
    check_out(args.out, NAME)
    ev = build_error_split(args.data_dir, args.results, args.reference, args.experiments, args.config)
    write_record(args.out, ev)


if __name__ == "__main__":
    sys.exit(main())
