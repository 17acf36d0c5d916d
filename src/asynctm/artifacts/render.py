"""Fixed-format text for the artifacts: numbers, Markdown and LaTeX (booktabs) tables, hardware lines.

Every cell is built once for both targets as a ``(markdown, latex)`` pair, so the two renderings of a table
cannot drift apart. Formatting is fixed (no locale, no timestamps): the same numbers give the same bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..experiments.plan import TM_IMPLS

MISSING = ("–", "--")


# The datasets as the paper names them, for every table, figure and page.
DATASET_LABELS = {
    "bbc_sport": "BBC Sport", "newsgroups20": "20 Newsgroups", "semeval": "SemEval", "imdb": "IMDb",
    "wsd_java": "WSD Java", "wsd_apple": "WSD Apple", "bike_sharing": "Bike Sharing",
    "blogfeedback": "BlogFeedback",
}


def dataset_label(name: str) -> str:
    """A dataset's (or experiment's) name as the paper writes it; the name itself where it has no label."""
    return DATASET_LABELS.get(name, name)


def finite(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


@dataclass(frozen=True)
class Stat:
    n: int
    mean: float
    std: float


NO_STAT = Stat(0, math.nan, math.nan)


def stat(values) -> Stat:
    """Mean and sample standard deviation (ddof=1; NaN with fewer than two values) of the finite values."""
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], dtype=np.float64)
    if v.size == 0:
        return NO_STAT
    return Stat(int(v.size), float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else math.nan)


def mean_std(values) -> tuple[float, float]:
    """:func:`stat`'s mean and sample standard deviation."""
    s = stat(values)
    return s.mean, s.std


def decimals_for(x: float, significant: int) -> int:
    if x == 0:
        return significant - 1
    return max(0, significant - 1 - math.floor(math.log10(abs(x))))


def sig(x, significant: int = 3) -> str:
    """``x`` to ``significant`` digits, never in exponent notation ('' for NaN)."""
    if not finite(x):
        return ""
    return f"{x:.{decimals_for(x, significant)}f}"


def fixed(x, decimals: int) -> str:
    return f"{x:.{decimals}f}" if finite(x) else ""


def tex_escape(text: str) -> str:
    out = str(text)
    for char, repl in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"),
                       ("_", r"\_"), ("{", r"\{"), ("}", r"\}"), ("~", r"\textasciitilde{}"),
                       ("^", r"\textasciicircum{}")):
        out = out.replace(char, repl)
    return out.replace("±", r"$\pm$").replace("×", r"$\times$").replace("–", "--").replace("−", "$-$")


# ---- cells: (markdown, latex) ----

def text(value) -> tuple[str, str]:
    value = "" if value is None else str(value)
    return value, tex_escape(value)


def pm(mean, std, decimals: int) -> tuple[str, str]:
    """'mean ± std' (std blank with one seed); the missing mark where there is no mean."""
    if not finite(mean):
        return MISSING
    if not finite(std):
        return fixed(mean, decimals), f"${fixed(mean, decimals)}$"
    return (f"{fixed(mean, decimals)} ± {fixed(std, decimals)}",
            rf"${fixed(mean, decimals)} \pm {fixed(std, decimals)}$")


def num(x, decimals: int, signed: bool = False) -> tuple[str, str]:
    if not finite(x):
        return MISSING
    s = f"{x:+.{decimals}f}" if signed else fixed(x, decimals)
    return s, f"${s}$"


def seconds(mean, std=math.nan) -> tuple[str, str]:
    """A time in seconds, 3 significant digits (std to the mean's decimals)."""
    if not finite(mean):
        return MISSING
    decimals = decimals_for(mean, 3)
    if finite(std) and std > 0 and round(std, decimals) == 0:
        decimals = decimals_for(std, 1)  # show a small spread rather than '± 0.00'
    if not finite(std):
        return fixed(mean, decimals), f"${fixed(mean, decimals)}$"
    return (f"{fixed(mean, decimals)} ± {fixed(std, decimals)}",
            rf"${fixed(mean, decimals)} \pm {fixed(std, decimals)}$")


def signed_seconds(x) -> tuple[str, str]:
    """A difference of times, signed, 3 significant digits."""
    return num(x, decimals_for(x, 3), signed=True) if finite(x) else MISSING


def speedup_text(x) -> str:
    if not finite(x):
        return ""
    return f"{x:.1f}" if x >= 1 else f"{x:.2f}"


def speedup(x) -> tuple[str, str]:
    if not finite(x):
        return MISSING
    return f"{speedup_text(x)}×", rf"${speedup_text(x)}\times$"


# ---- tables ----

@dataclass
class Grid:
    """A display table: columns (markdown header, LaTeX header, alignment 'l'/'r') and rows of cells,
    each row in a group (a rule separates groups in LaTeX; Markdown shows a group's label once)."""

    columns: list[tuple[str, str, str]]
    rows: list[tuple[str, list[tuple[str, str]]]] = field(default_factory=list)

    def add(self, group: str, cells: list[tuple[str, str]]) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"row has {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append((group, cells))

    def markdown(self) -> str:
        def line(cells):
            return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

        out = [line([c[0] for c in self.columns]),
               "|" + "|".join("---:" if c[2] == "r" else "---" for c in self.columns) + "|"]
        out += [line([cell[0] for cell in cells]) for _, cells in self.rows]
        return "\n".join(out) + "\n"

    def latex(self, comment: str) -> str:
        out = [f"% {comment}", r"\begin{tabular}{" + "".join(c[2] for c in self.columns) + "}", r"\toprule",
               " & ".join(c[1] for c in self.columns) + r" \\", r"\midrule"]
        previous = None
        for group, cells in self.rows:
            if previous is not None and group != previous:
                out.append(r"\midrule")
            previous = group
            out.append(" & ".join(cell[1] for cell in cells) + r" \\")
        out += [r"\bottomrule", r"\end{tabular}"]
        return "\n".join(out) + "\n"


def first_in_group(rows: list[str]) -> list[bool]:
    """For each row's group label, whether it starts a new group (to print the label once)."""
    return [i == 0 or rows[i] != rows[i - 1] for i in range(len(rows))]


# ---- provenance ----

def _impl_key(impl: str):
    return (TM_IMPLS.index(impl), impl) if impl in TM_IMPLS else (len(TM_IMPLS), impl)


def hardware(records: pd.DataFrame) -> str:
    """One sentence naming the CPU(s), the threads each implementation ran on and the GPU, from the
    records' provenance (what the numbers were measured on)."""
    if records.empty:
        return "Hardware: none (no records)."
    machines: dict[str, list] = {}
    for r in records.itertuples():
        cpu = f"{r.cpu_model} ({int(r.logical_cores)} logical cores)" if finite(r.logical_cores) else str(r.cpu_model)
        machines.setdefault(cpu, []).append(r)
    cpus = sorted(machines)
    if len(cpus) > 1:
        # Records of several machines: say which ran where (never one line that reads as one host).
        def where(cpu):
            recs = machines[cpu]
            if len(recs) > 3:
                return f"{cpu}: {len(recs)} records"
            return f"{cpu}: {', '.join(f'{r.experiment}/{r.impl}/{r.params}/seed{r.seed}' for r in recs)}"

        cpu_part = (f"records from {len(cpus)} machines (speed-ups and time ratios use one machine's records "
                    "only): CPU " + "; CPU ".join(where(c) for c in sorted(cpus, key=lambda c: (-len(machines[c]), c))))
    else:
        cpu_part = f"CPU {cpus[0]}"
    threads = []
    for impl in sorted(records["impl"].unique(), key=_impl_key):
        counts = sorted({int(t) for t in records.loc[records["impl"] == impl, "threads"] if finite(t)})
        if counts:
            threads.append(f"{impl} {'/'.join(map(str, counts))}")
    gpus = sorted({
        r.gpu_name + "".join(f", {label} {value}" for label, value in (("driver", r.gpu_driver), ("CUDA", r.gpu_cuda))
                             if finite(value))
        for r in records.itertuples() if finite(r.gpu_name)
    })
    parts = [cpu_part]
    if threads:
        parts.append(f"threads per run: {', '.join(threads)}")
    parts.append(f"GPU {'; '.join(gpus)}" if gpus else "no GPU")
    return "Hardware: " + "; ".join(parts) + "."


def describe_library(records: pd.DataFrame) -> str:
    """'library version on device' of the records, distinct values joined."""
    names = set()
    for r in records.itertuples():
        name = str(r.library) if finite(r.library) else "unknown library"
        if finite(r.library_version):
            name += f" {r.library_version}"
        if finite(r.device):
            name += f" on {r.device}"
        names.add(name)
    return ", ".join(sorted(names))
