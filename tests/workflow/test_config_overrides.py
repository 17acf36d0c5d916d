"""The configuration: every command line the documentation shows works (dry run), command-line values are
typed as the schema says, and impossible settings are refused up front, naming the key and the allowed values,
by the Snakefile and by ``python -m asynctm.experiments plan``."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from asynctm.config_check import ConfigError, check_config, coerce, load_config, load_schema, semantic_errors
from asynctm.limits import T_MAX
from tests.helpers import REPO, copy_workflow

DOCS = ("README.md", "docs/running.md", "docs/configuration.md", "docs/gpu-and-clusters.md", "config/README.md")


def documented_commands() -> list[tuple[str, list[str]]]:
    """``(doc, argv)`` of every snakemake command line in the docs' bash blocks."""
    found = []
    for doc in DOCS:
        in_bash = False
        for line in (REPO / doc).read_text().splitlines():
            if line.startswith("```"):
                in_bash = line.strip() == "```bash"
                continue
            if not in_bash:
                continue
            for part in line.split("&&"):
                argv = shlex.split(part, comments=True)
                if argv and argv[0].endswith("snakemake") and (doc, argv[1:]) not in found:
                    if not any(a == argv[1:] for _, a in found):
                        found.append((doc, argv[1:]))
    return found


def as_dry_run(args: list[str]) -> list[str]:
    """The same command as a dry run on 2 cores (``--report`` builds a file: its config is what is tested)."""
    out, it = [], iter(args)
    for a in it:
        if a == "--cores":
            next(it)
            out += ["--cores", "2"]
        elif a == "--report":
            next(it)
        else:
            out.append(a)
    return [*out, "-n"]


@pytest.fixture
def workdir(tmp_path) -> Path:
    # <tmp>/repo is the checkout; <tmp>/shared/datasets stands for the mirror the docs name (a dry run only
    # checks that it is a folder).
    repo = copy_workflow(tmp_path / "repo")
    (tmp_path / "shared" / "datasets").mkdir(parents=True)
    return repo


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=workdir, capture_output=True, text=True,
                          timeout=300)


def test_the_docs_show_the_commands_this_file_checks():
    cmds = [" ".join(a) for _, a in documented_commands()]
    assert len(cmds) >= 12, cmds
    assert any("'impls=[tm_cpu,pytm_indexed]'" in shlex.join(a) and "seeds=[0,1]" in " ".join(a)
               for _, a in documented_commands())
    assert any("seeds=[0]" in c for c in cmds)


@pytest.mark.parametrize("doc, args", documented_commands(), ids=lambda v: v if isinstance(v, str) else " ".join(v))
def test_every_documented_command_line_works(workdir, doc, args):
    r = snakemake(workdir, *as_dry_run(args))
    assert r.returncode == 0, f"{doc}: snakemake {shlex.join(args)}\n{r.stderr[-3000:]}"


def test_list_and_mapping_overrides_take_effect(workdir):
    r = snakemake(workdir, "--cores", "2", "-n", "exp_wsd_apple", "--config", "seeds=[0,1]",
                  "impls=[tm_cpu,pytm_indexed]", "tm={epochs: 5}", "datasets=[wsd_apple]")
    assert r.returncode == 0, r.stderr
    out = r.stdout + r.stderr
    runs = set(re.findall(r"results/wsd_apple/(\w+)/(n\d+_T\d+_s[\d.]+_e\d+)/seed(\d+)\.json", out))
    assert runs == {(impl, "n300_T50_s5_e5", seed) for impl in ("tm_cpu", "pytm_indexed") for seed in "01"}, runs


@pytest.mark.parametrize(
    "overrides, messages",
    [
        # Problems of meaning are reported together, one line each.
        (["experiments={bike_sharing: {task: classification}, imdb: {protocol: clean}}",
          "protocols={bbc_sport: [clean]}", "sweeps={semevl: {clauses: [2], impls: [tm_cpu], seeds: [0], epochs: 1}}"],
         [r"config experiments\.bike_sharing\.task: 'classification' does not fit dataset bike_sharing "
          r"\(a regression dataset\); allowed: regression",
          r"config experiments\.imdb\.protocol: dataset imdb has no protocol 'clean'; allowed: paper",
          r"config protocols\.bbc_sport: dataset bbc_sport has no protocol 'clean'; allowed: paper",
          r"config sweeps\.semevl: there is no experiment 'semevl'; allowed: bbc_sport, bike_sharing"]),
        ([f"experiments={{wsd_apple: {{T: {2**40}}}}}"], [r"1099511627776 is greater than the maximum of 1073741823"]),
        (["seeds=[0,x]"], [r"'x' is not of type 'integer'"]),
    ],
    ids=["meaning", "T", "seeds"],
)
def test_impossible_settings_are_refused_before_anything_runs(workdir, overrides, messages):
    r = snakemake(workdir, "--cores", "2", "-n", "--config", *overrides)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-3000:]
    for message in messages:
        assert re.search(message, out), (message, out[-3000:])
    assert "fetch" not in re.findall(r"^rule (\w+):", out, re.M)
    assert not (workdir / "data").exists() and not (workdir / "results").exists()


def test_coerce_types_command_line_strings_as_the_schema_says():
    schema = load_schema(REPO / "workflow" / "schemas" / "config.schema.yaml")
    got = coerce({"seeds": ["0", "1"], "tm": {"epochs": "5", "boost_true_positive": "false"}, "gpu": "true",
                  "cpu_threads": "null", "data_mirror": "../shared/datasets", "impls": ["tm_cpu"],
                  "experiments": {"x": {"s": "1.5", "T": "50", "dataset": "semeval"}},
                  "mlp_novelty": {"hidden_layer_sizes": ["100", "30"]}}, schema)
    assert got == {"seeds": [0, 1], "tm": {"epochs": 5, "boost_true_positive": False}, "gpu": True,
                   "cpu_threads": None, "data_mirror": "../shared/datasets", "impls": ["tm_cpu"],
                   "experiments": {"x": {"s": 1.5, "T": 50, "dataset": "semeval"}},
                   "mlp_novelty": {"hidden_layer_sizes": [100, 30]}}
    # A string that does not spell the wanted type stays a string (the schema then names it).
    assert coerce({"seeds": ["zero"]}, schema) == {"seeds": ["zero"]}


def test_the_repository_config_passes_and_each_check_can_fail():
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    assert semantic_errors(config) == []
    config["experiments"]["semeval"]["T"] = T_MAX + 1
    config["experiments"]["bbc_sport"]["task"] = "classification"
    config["sweeps"]["nothing"] = config["sweeps"]["semeval"]
    config["reduced"] = {"imbd": {"impls": ["pytm_indexed"], "seeds": [0], "epochs": 5}}
    config["experiments"]["imdb"]["clauses"] = 2**31
    with pytest.raises(ConfigError) as e:
        check_config(config)
    lines = str(e.value).splitlines()
    assert len(lines) == 5, lines
    assert "config reduced.imbd: there is no experiment 'imbd'; allowed: bbc_sport" in lines[-1]
    assert any(line.startswith("config experiments.imdb.clauses: 2147483648 is out of range") for line in lines)
    assert any(line.startswith("config experiments.semeval.T: 1073741824 is out of range") for line in lines)
    assert any("experiments.bbc_sport.task" in line and "allowed: novelty" in line for line in lines)


def _plan(tmp_path, config: dict) -> subprocess.CompletedProcess:
    (tmp_path / "config").mkdir(exist_ok=True)
    shutil.copy(REPO / "workflow" / "schemas" / "config.schema.yaml", tmp_path / "config" / "schema.yaml")
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    return subprocess.run([sys.executable, "-m", "asynctm.experiments", "plan"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)


def test_plan_validates_the_config(tmp_path):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    r = _plan(tmp_path, config)
    assert r.returncode == 0 and "results/wsd_apple/tm_cpu/n300_T50_s5_e100/seed0.json" in r.stdout, r.stderr
    config["experiments"]["bike_sharing"]["task"] = "classification"
    config["sweeps"]["semeval_typo"] = config["sweeps"]["semeval"]
    r = _plan(tmp_path, config)
    assert r.returncode == 1 and r.stdout == "", r.stdout[:500]
    assert "config experiments.bike_sharing.task: 'classification'" in r.stderr
    assert "config sweeps.semeval_typo: there is no experiment" in r.stderr
    assert "Traceback" not in r.stderr
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["seeds"] = ["zero"]
    r = _plan(tmp_path, config)
    assert r.returncode == 1 and "config seeds.0: 'zero' is not of type 'integer'" in r.stderr, r.stderr


def test_load_config_names_an_unreadable_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read it"):
        load_config(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("seeds: [0,\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(tmp_path / "bad.yaml")


def test_a_sweep_limit_names_known_implementations(tmp_path):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["sweeps"]["semeval"]["max_clauses"] = {"pytm": 640, "tm_cpu": 0}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "config.yaml", REPO / "workflow" / "schemas" / "config.schema.yaml")
    assert "config sweeps.semeval.max_clauses: 'pytm' is not one of ['tm_gpu', 'tm_cpu'" in str(err.value)
    assert "config sweeps.semeval.max_clauses.tm_cpu: 0 is less than the minimum of 1" in str(err.value)


def test_threads_per_clause_is_the_gpu_builds_not_a_setting(tmp_path):
    """tm_gpu runs one thread per clause (the paper's design), tm_gpu_warp a warp: a configuration that still sets
    the threads per clause of every GPU run is refused, naming the key."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    assert "tm_gpu_warp" in config["impls"]
    config["gpu_threads_per_clause"] = 32
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "config.yaml", REPO / "workflow" / "schemas" / "config.schema.yaml")
    assert "config gpu_threads_per_clause: no longer a setting" in str(err.value)
    assert "tm_gpu_warp" in str(err.value)


def test_an_unknown_svm_library_is_refused_with_the_allowed_ones(tmp_path):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["experiments"]["imdb"]["svm_library"] = "libsvm"
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "config.yaml", REPO / "workflow" / "schemas" / "config.schema.yaml")
    assert ("config experiments.imdb.svm_library: 'libsvm' is not one of ['thundersvm-gpu', 'thundersvm-cpu', "
            "'sklearn']") in str(err.value)
