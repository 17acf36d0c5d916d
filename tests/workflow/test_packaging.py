"""The set-up stays in step: pyproject vs environment.yml, README commands vs .ci/run, import hygiene."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import yaml

from tests.helpers import REPO


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~ \[]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_lists_the_same_dependencies_as_pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = {_name(r) for r in project["dependencies"]}
    wanted |= {_name(r) for r in project["optional-dependencies"]["test"]}
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    have = set()
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            have |= {_name(r) for r in dep["pip"] if not r.startswith("-")}
        else:
            have.add(_name(dep))
    missing = wanted - have
    assert not missing, f"environment.yml lacks {sorted(missing)} (declared in pyproject.toml)"


def test_readme_starts_with_the_two_setup_commands_and_ci_runs_the_test_command():
    readme = (REPO / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)\n```", readme, re.S)
    assert block, "README.md has no bash block"
    before = [p for p in re.split(r"\n\s*\n", readme[:block.start()]) if p.strip()]
    assert len(before) <= 2 and before[0].startswith("# "), \
        "the README must open with its title, one paragraph, then its set-up commands"
    commands = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(commands) == 2
    assert "snakemake --cores all" in commands[0] and "data_mirror=" in commands[0]
    assert commands[1] == ".venv/bin/python -m pytest -q"
    ci = (REPO / ".ci" / "run").read_text()
    assert commands[1] in ci.splitlines(), "CI must run exactly the README's test command"


def test_importing_the_package_does_not_touch_a_gpu():
    code = "import sys, asynctm, asynctm.estimators, asynctm.backends; print('pycuda' in ' '.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_readme_holds_the_claims_block_and_links_the_results_summary():
    """The README carries the generated claims block (between its markers, once) and no copy of the results
    summary, which stays in paper_tables/results_summary.md (built with the tables) and is linked."""
    readme = (REPO / "README.md").read_text()
    assert readme.count("<!-- claims:start -->") == 1 and readme.count("<!-- claims:end -->") == 1, \
        "README.md must hold one <!-- claims:start --> ... <!-- claims:end --> block"
    assert readme.index("<!-- claims:start -->") < readme.index("<!-- claims:end -->")
    assert "results:start" not in readme and "results:end" not in readme, \
        "README.md must not carry the results summary: link paper_tables/results_summary.md instead"
    assert "](paper_tables/results_summary.md)" in readme
