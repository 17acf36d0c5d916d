"""The documentation (README.md, docs/*.md, benchmarks/README.md and kernels/README.md): no measured number typed by
hand (they come from the generated pages: tables, summary, claims, the benchmarks' index), READMEs short enough to
read, and relative links that lead somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import REPO

README = REPO / "README.md"
README_MAX_BYTES = 10_240
KERNELS_README = REPO / "kernels" / "README.md"  # the kernels' design: its measurements are in the generated pages


def doc_files() -> list[Path]:
    return [README, *sorted((REPO / "docs").glob("*.md"))]


# -- hand-typed measured numbers -------------------------------------------------------------------------------

# Numbers the docs may state although they look like measurements: facts of the paper's protocol or of a
# software version, never results. Keep this list tiny; each entry must be in use (see the test below).
ALLOWED = {
    "5 seeds": "the paper's protocol: five independent repeats per setting (config seeds)",
    "100 epochs": "the paper's protocol: epochs per run (config tm.epochs)",
    "CPython 3.12": "the GPU machine's Python version, which the staged PyCUDA wheels are built for",
}

_NUM = r"\d(?:[\d,]*\d)?(?:\.\d+)?"
# (kind, pattern): what a measured number looks like in prose.
MEASURED = [
    ("percent", rf"{_NUM}\s*%"),
    ("time", rf"{_NUM}\s*(?:s|ms|sec|secs|seconds?|min|mins|minutes?|h|hrs?|hours?|days?|weeks?)\b(?!-)"),
    ("ratio", rf"{_NUM}\s?(?:x|×)(?![\w-])"),
    ("per epoch", rf"{_NUM}\s*(?:s/epoch|s per epoch|per epoch)"),
    ("points", rf"{_NUM}\s*(?:percentage\s+)?points?\b"),
    ("MAE", rf"{_NUM}\s*(?:MAE|RMSE)\b|\b(?:MAE|RMSE)\s*(?:of|is|was|at|=|:)?\s*{_NUM}"),
    ("metric", rf"\b(?:accuracy|F1|speed-?up|time)\s+(?:of|is|was|at|reaches|=|:)\s*{_NUM}"),
    ("count", rf"{_NUM}\s+(?-i:[a-z]+\s+)?(?:records?|runs?|seeds?|epochs?|leases?|passed|failed|skipped)\b"),
    ("spread", rf"{_NUM}\s*±|±\s*{_NUM}"),
    ("size", rf"{_NUM}\s*(?:[KMGT]i?B)\b"),
    ("decimals", r"\b\d+\.\d{2,}\b"),
]
_MEASURED = re.compile("|".join(f"(?P<k{i}>{p})" for i, (_, p) in enumerate(MEASURED)), re.I)

_GENERATED = re.compile(r"<!--\s*([\w-]+):start\s*-->.*?<!--\s*\1:end\s*-->", re.S)
_FENCED = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
_INLINE_CODE = re.compile(r"(`+)[^`]*?\1")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")


def _blank(match: re.Match) -> str:
    """The match replaced by spaces, its newlines kept (line numbers stay right)."""
    return re.sub(r"[^\n]", " ", match.group(0))


def prose(text: str) -> str:
    """The text a reader reads as prose: generated blocks, code blocks, inline code and link targets blanked."""
    for pattern in (_GENERATED, _FENCED, _INLINE_CODE, _LINK_TARGET):
        text = pattern.sub(_blank, text)
    for phrase in ALLOWED:
        text = text.replace(phrase, " " * len(phrase))
    return text


def hand_typed_numbers(text: str) -> list[tuple[int, str, str]]:
    """``(line, kind, text)`` of each number in the prose that looks measured."""
    found = []
    for m in _MEASURED.finditer(prose(text)):
        kind = MEASURED[int(next(k for k, v in m.groupdict().items() if v is not None)[1:])][0]
        found.append((text.count("\n", 0, m.start()) + 1, kind, m.group(0).strip()))
    return found


def test_no_measured_number_is_typed_by_hand():
    problems = [f"{doc.relative_to(REPO)}:{line}: {hit!r} ({kind})"
                for doc in [*doc_files(), KERNELS_README] for line, kind, hit in hand_typed_numbers(doc.read_text())]
    assert not problems, ("measured numbers typed by hand (they drift from the records): link the generated page "
                          "that holds them, e.g. paper_tables/claims.md or paper_tables/results_summary.md:\n"
                          + "\n".join(problems))


PLANTED = """# Results

Our GPU build reaches 95.16 ± 1.06 % on WSD Apple at 0.144 s per epoch, a 2.6x speed-up over the paper's code.
Bike Sharing ends at MAE 28.52, 1.5 points below; 230 complete run records, checkout 12.7 MiB.
"""


@pytest.mark.parametrize("kind", ["spread", "percent", "time", "ratio", "MAE", "points", "count", "size"])
def test_the_check_finds_a_planted_measurement(kind):
    assert kind in {k for _, k, _ in hand_typed_numbers(PLANTED)}, hand_typed_numbers(PLANTED)


def test_the_check_finds_a_bare_decimal_and_a_metric():
    found = hand_typed_numbers("The last-10 mean is 92.41 against the paper's.\nIts accuracy of 95 was best.\n")
    assert [(line, kind) for line, kind, _ in found] == [(1, "decimals"), (2, "metric")], found


def test_the_check_ignores_generated_blocks_code_and_allowed_facts():
    text = ("<!-- claims:start -->\nOurs: 95.16 ± 1.06 % at 0.144 s per epoch.\n<!-- claims:end -->\n"
            "```bash\n.venv/bin/snakemake --cores all report   # about 2 min\n```\n"
            "Run `--config run_budget_hours=0.25` for 5 seeds of 100 epochs; see [it](paper_tables/t_0.25.md).\n")
    assert hand_typed_numbers(text) == []
    # outside its block, the same line is found, on its own line number
    found = hand_typed_numbers(text.replace("<!-- claims:end -->\n", "") + "Ours: 95.16 % in 3.2 s.\n")
    assert {line for line, _, _ in found} >= {2, 7}, found


def test_the_allowlist_is_in_use():
    text = "\n".join(doc.read_text() for doc in doc_files())
    unused = [phrase for phrase in ALLOWED if phrase not in text]
    assert not unused, f"allowed phrases no document uses any more (remove them from ALLOWED): {unused}"


# -- size and links --------------------------------------------------------------------------------------------

def test_the_readme_is_at_most_10_kib():
    size = README.stat().st_size
    assert size <= README_MAX_BYTES, (f"README.md is {size} bytes, over {README_MAX_BYTES}: move the detail into "
                                      "a page of docs/ and link it")


_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation (but - and _) dropped, spaces to -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = _FENCED.sub("", path.read_text())
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, re.M)}


def relative_links(doc: Path) -> list[tuple[int, str]]:
    """``(line, target)`` of each link in ``doc`` that is neither a URL nor in code."""
    text = _INLINE_CODE.sub(_blank, _FENCED.sub(_blank, doc.read_text()))
    out = []
    for m in _LINK.finditer(text):
        target = m.group(1) or m.group(2)
        if not re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):
            out.append((text.count("\n", 0, m.start()) + 1, target))
    return out


def broken_links(doc: Path, repo: Path = REPO) -> list[str]:
    problems = []
    for line, target in relative_links(doc):
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        where = f"{doc.relative_to(repo)}:{line}: {target}"
        if not dest.exists():
            problems.append(f"{where}: no such file")
        elif repo.resolve() not in dest.parents:
            problems.append(f"{where}: outside the repository")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            problems.append(f"{where}: no heading #{anchor} in {dest.relative_to(repo.resolve())}")
    return problems


def test_every_relative_link_leads_to_a_file():
    docs = doc_files()
    assert len(docs) > 1, "docs/ has no pages"
    assert sum(len(relative_links(doc)) for doc in docs) >= 10
    problems = [p for doc in docs for p in broken_links(doc)]
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_the_link_check_finds_a_broken_link(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "there.md").write_text("# Cost and budget\n")
    page = tmp_path / "docs" / "page.md"
    page.write_text("## A `key_name` heading\n[ok](../there.md#cost-and-budget) [self](#a-key_name-heading) "
                    "[web](https://example.org) `[code](nowhere.md)`\n[gone](../missing.md) "
                    "[bad anchor](../there.md#nothing)\n")
    assert broken_links(page, tmp_path) == ["docs/page.md:3: ../missing.md: no such file",
                                  "docs/page.md:3: ../there.md#nothing: no heading #nothing in there.md"]


# benchmarks/README.md, the benchmarks' user's guide: the same rules, its numbers in benchmarks/results/INDEX.md.
BENCHMARKS_GUIDE = REPO / "benchmarks" / "README.md"
BENCHMARKS_GUIDE_MAX_BYTES = 12_288


def test_the_benchmarks_guide_is_short_types_no_measured_number_and_links_what_exists():
    text = BENCHMARKS_GUIDE.read_text()
    problems = [f"benchmarks/README.md:{line}: {hit!r} ({kind}): link the generated page that holds it "
                "(benchmarks/results/INDEX.md lists them)" for line, kind, hit in hand_typed_numbers(text)]
    problems += broken_links(BENCHMARKS_GUIDE)
    size = len(text.encode())
    if size > BENCHMARKS_GUIDE_MAX_BYTES:
        problems.append(f"benchmarks/README.md is {size} bytes, over {BENCHMARKS_GUIDE_MAX_BYTES}: say what a script "
                        "measures and how to run it; the discussion of results belongs in generated pages")
    assert not problems, "\n".join(problems)


def test_the_readme_links_every_docs_page():
    linked = {(README.parent / target.partition("#")[0]).resolve() for _, target in relative_links(README)}
    missing = [p.name for p in doc_files()[1:] if p.resolve() not in linked]
    assert not missing, f"README.md does not link these pages of docs/: {missing}"
