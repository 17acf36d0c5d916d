"""The commands of the documentation (README.md and docs/*.md): each calls the virtual environment (they work
right after the README's two set-up commands), the rerun recipes plan exactly the runs they promise plus the
tables, figures and report built from them (dry runs through a real shell, in a copy of the workflow with the
committed records), and the README's quick-start report target builds the page and says where it is."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import REPO, copy_workflow

README = REPO / "README.md"
DOCS = REPO / "docs"
RECORD = re.compile(r"results/(\w+)/(\w+)/([\w.]+)/seed(\d+)\.json")


def bash_blocks(text: str) -> list[tuple[str, list[str]]]:
    """``(heading above it, lines)`` of every ```bash block."""
    out, heading, block = [], "", None
    for line in text.splitlines():
        if block is None and line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.startswith("```"):
            if block is None and line.strip() == "```bash":
                block = []
            elif block is not None:
                out.append((heading, block))
                block = None
            continue
        if block is not None and line.strip():
            block.append(line)
    return out


def doc_files() -> list[Path]:
    """README.md, then every page of docs/."""
    return [README, *sorted(DOCS.glob("*.md"))]


def doc_blocks() -> list[tuple[str, str, list[str]]]:
    """``(file, heading above it, lines)`` of every ```bash block of the documentation."""
    return [(doc.relative_to(REPO).as_posix(), heading, lines) for doc in doc_files()
            for heading, lines in bash_blocks(doc.read_text())]


BARE = re.compile(r"(?:^|[|;&]\s*|\bxargs\s+)(snakemake|python3?|pytest|pip)\b(?!3? -m venv)")


def test_every_documented_command_calls_the_virtualenv():
    problems = []
    for doc, heading, lines in doc_blocks():
        for line in lines:
            if line.startswith("export PYTHONPATH=src"):
                continue  # a command for the GPU machine (the GPU campaign's device calls), run there, not here
            if BARE.search(line.split("  #")[0]):
                problems.append(f"{doc} [{heading}] {line}")
    # Inline commands in the prose too (not in generated blocks, which their generator writes).
    for doc in doc_files():
        prose = re.sub(r"<!--\s*([\w-]+):start\s*-->.*?<!--\s*\1:end\s*-->", "", doc.read_text(), flags=re.S)
        for span in re.findall(r"(?<!`)`([^`\n]+)`(?!`)", prose):
            if re.match(r"(snakemake|python3?|pytest|pip) ", span) and not span.startswith("python3 -m venv"):
                problems.append(f"{doc.relative_to(REPO)} inline: {span}")
    assert not problems, "documented commands that need an activated virtualenv:\n" + "\n".join(problems)


def test_the_commands_check_reads_the_docs_pages():
    """The commands moved out of the README into docs/ stay under these tests: the rerun recipes, the plan
    commands and the GPU campaign's calls are found there, the quick start in the README."""
    found = {(doc, heading.split(":")[0]) for doc, heading, _ in doc_blocks()}
    assert ("README.md", "Quick start") in found, found
    assert any(doc.startswith("docs/") and heading.startswith("Rerunning") for doc, heading in found), found
    assert any(line.startswith("export PYTHONPATH=src;") for doc, _, lines in doc_blocks() if doc.startswith("docs/")
               for line in lines)


def _recipes() -> dict[str, str]:
    """The rerun recipes by their comment."""
    blocks = [lines for _, heading, lines in doc_blocks() if heading.startswith("Rerunning")]
    assert len(blocks) == 1, "README.md and docs/ must hold one 'Rerunning ...' section with a bash block"
    return {line.split("#", 1)[1].strip(): line.split("  #")[0].strip() for line in blocks[0]}


def _quick_start_report() -> str:
    """The README's quick-start line that builds the report."""
    return next(line for heading, lines in bash_blocks(README.read_text()) if heading.startswith("Quick start")
                for line in lines if " report " in line)


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """<tmp>/repo: the workflow, the committed records and artifacts (modification times kept, as in a checkout
    where they are up to date), and <tmp>/shared/datasets."""
    root = tmp_path_factory.mktemp("clone")
    repo = copy_workflow(root / "repo", copy=shutil.copy2)
    shutil.copytree(REPO / "results", repo / "results", ignore=shutil.ignore_patterns("smoke"))
    shutil.copytree(REPO / "paper_tables", repo / "paper_tables",
                    ignore=shutil.ignore_patterns("report.html", "reference"), dirs_exist_ok=True)
    shutil.copytree(REPO / "figures", repo / "figures")
    (root / "shared" / "datasets").mkdir(parents=True)
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "snakemake").symlink_to(Path(sys.executable).with_name("snakemake"))
    return repo


def _dry_run(repo: Path, command: str) -> tuple[set, dict, str]:
    """Run a documented line through bash with -n right after snakemake; (planned records, job counts, output)."""
    line = command.replace(".venv/bin/snakemake", ".venv/bin/snakemake -n", 1)
    r = subprocess.run(["bash", "-c", line], cwd=repo, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"{command}\n{out[-3000:]}"
    planned = set(re.findall(r"^\s+output: .*?(results/\w+/\w+/[\w.]+/seed\d+\.json)", out, re.M))
    stats = out.split("Job stats:", 1)[1].split("\n\n", 1)[0] if "Job stats:" in out else ""
    jobs = {m[0]: int(m[1]) for m in re.findall(r"^(\w+)\s+(\d+)$", stats, re.M)}
    return planned, jobs, out


def _committed(pattern: str) -> set:
    return {p.relative_to(REPO).as_posix() for p in REPO.glob(pattern)}


def test_rerun_one_record_rebuilds_what_depends_on_it(clone):
    command = _recipes()["one record"]
    planned, jobs, out = _dry_run(clone, command)
    record = RECORD.search(command).group(0)
    assert planned == {record}, planned
    assert jobs.get("run_tm") == 1 and "run_svm" not in jobs
    assert {"prepare", "table3_performance", "results_summary", "report"} <= set(jobs), jobs  # data first; same run


def test_rerun_one_experiment(clone):
    planned, jobs, _ = _dry_run(clone, _recipes()["one experiment"])
    assert planned >= _committed("results/wsd_apple/*/*/seed*.json") - _committed("results/wsd_apple/*/*_e5/seed*.json")
    assert {RECORD.match(p).group(1) for p in planned} == {"wsd_apple"}
    assert {"table3_performance", "table4_svm_time", "report"} <= set(jobs)


def test_rerun_one_implementation(clone):
    planned, jobs, _ = _dry_run(clone, _recipes()["one implementation"])
    # the novelty MLP stages trained on those runs' class sums follow them
    assert planned == (_committed("results/*/tm_cpu/*/seed*.json")
                       | _committed("results/*/mlp_novelty/tm_cpu.*/seed*.json"))
    assert _committed("results/*/tm_cpu/*/seed*.json")
    assert {"table3_performance", "table5_regression", "figures", "report"} <= set(jobs)


@pytest.mark.parametrize("recipe", ["changed hyperparameters, from a file", "the same on the command line"])
def test_a_changed_hyperparameter_gives_new_records(clone, recipe):
    planned, jobs, _ = _dry_run(clone, _recipes()[recipe])
    tm = {p for p in planned if "/svm/" not in p}
    assert tm and all(RECORD.match(p).group(3) == "n300_T100_s5_e100" for p in tm), planned
    assert {RECORD.match(p).group(2) for p in tm} >= {"tm_cpu", "pytm_indexed", "pytm_nonindexed"}


def test_checkout_order_does_not_rerun_committed_records(tmp_path):
    """A fresh clone gives files their checkout times, in no particular order: a novelty stage's class sums newer
    than its MLP record, or a dataset newer than a run, must not make the quick start retrain anything."""
    repo = copy_workflow(tmp_path / "repo", copy=shutil.copy2)
    shutil.copytree(REPO / "results", repo / "results", ignore=shutil.ignore_patterns("smoke"))
    later = time.time() + 60
    for scores in (repo / "results").glob("*/*/*/seed*.scores.npz"):
        os.utime(scores, (later, later))
    assert any((repo / "results").glob("*/mlp_novelty/*/seed*.json"))
    (tmp_path / "shared" / "datasets").mkdir(parents=True)
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "snakemake").symlink_to(Path(sys.executable).with_name("snakemake"))
    command = _quick_start_report()
    planned, jobs, out = _dry_run(repo, command.split("  #")[0])
    assert not planned and not {"run_tm", "run_tm_novelty", "run_mlp_novelty", "run_svm"} & set(jobs), out[-3000:]


def test_tables_follow_a_changed_config(tmp_path):
    """The settings the tables are built with follow the config on every invocation, also on a checkout whose
    artifacts_config.yaml was written by another configuration; reading the workflow (here a dry run) writes
    nothing: the rule artifacts_config writes the settings when the jobs run."""
    repo = copy_workflow(tmp_path / "repo", copy=shutil.copy2)
    shutil.copytree(REPO / "results", repo / "results", ignore=shutil.ignore_patterns("smoke"))
    shutil.copytree(REPO / "paper_tables", repo / "paper_tables",
                    ignore=shutil.ignore_patterns("report.html", "reference"), dirs_exist_ok=True)
    settings = repo / "paper_tables" / "artifacts_config.yaml"
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "snakemake").symlink_to(Path(sys.executable).with_name("snakemake"))
    committed = settings.read_text()
    assert "reduced:" in committed
    _, jobs, out = _dry_run(repo, ".venv/bin/snakemake --cores 1 tables --config run_missing=false 'seeds=[0,1]'")
    assert "artifacts_config" in jobs and "table3_performance" in jobs, out[-3000:]
    assert settings.read_text() == committed
    _, jobs, out = _dry_run(repo, ".venv/bin/snakemake --cores 1 tables --config run_missing=false")
    assert "artifacts_config" not in jobs, out[-3000:]
    assert settings.read_text() == committed


def test_quick_start_report_builds_the_page_and_names_the_outputs(clone):
    command = _quick_start_report()
    r = subprocess.run(["bash", "-c", command.split("  #")[0]], cwd=clone, capture_output=True, text=True,
                       timeout=600, env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert (clone / "paper_tables" / "report.html").is_file()
    assert "Results: open paper_tables/report.html in a browser" in r.stderr
    assert "run records under results/" in r.stderr


def test_the_documented_plan_commands_run():
    lines = [line.split("  #")[0].strip() for _, _, lines in doc_blocks() for line in lines
             if line.startswith(".venv/bin/python -m asynctm.experiments plan")]
    assert len(lines) >= 3, lines
    for line in lines:
        argv = [sys.executable, *line.split()[1:]]
        r = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and r.stdout.strip(), f"{line}\n{r.stderr[-2000:]}"
