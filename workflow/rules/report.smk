# One HTML page of the results, built by `asynctm report`: the results summary, Tables 3-5
# (ours beside the paper's, gaps with their reasons), every figure with its caption, and how each number was
# produced (the records' commits, machines, libraries and dataset protocols). Output: {TABLES_DIR}/report.html,
# beside the tables it shows (paper_tables/report.html at paper scale, results/smoke/paper_tables/report.html at
# smoke scale; git-ignored); figures are embedded, links point to the table and figure files.
# `snakemake --cores all report` builds it (and what it needs).
#
# Include after tables.smk, figures.smk and claims.smk (it uses their rules, ARTIFACTS_CONFIG and ARTIFACTS_LOGS).
import sys
from pathlib import Path

from asynctm.artifacts.rules import inputs_manifest_path, report_record_input, with_stamp


rule report:
    input:
        unpack(with_stamp("report", TABLES_DIR, report_record_input(config, record_paths, RESULTS))),
        tables=rules.tables.input,
        figures=rules.figures.input,
        claims=rules.claims.input,  # the verdicts it opens on (claims.smk)
        config=ARTIFACTS_CONFIG,
    output:
        html=f"{TABLES_DIR}/report.html",
        inputs=inputs_manifest_path("report", TABLES_DIR),
    log:
        f"{ARTIFACTS_LOGS}/report.log",
    conda:
        ENV
    shell:
        f"asynctm report --tables {word(TABLES_DIR)} --figures {word(FIGURES_DIR)} --config {{input.config:q}}"
        " --out {output.html:q} --inputs-manifest {output.inputs:q} --stale {input.stale:q} --log {log:q}"
        " --records {input.records:q}"


# A workflow has one onsuccess: add other end-of-run steps here. After a run, say where the results are.
onsuccess:
    if Path(rules.report.output[0]).is_file():
        print(
            f"\nResults: open {rules.report.output[0]} in a browser (summary, Tables 3-5, figures, provenance); "
            f"tables in {TABLES_DIR}/, figures in {FIGURES_DIR}/, run records under {RESULTS}/.",
            file=sys.stderr,
        )
        if SMOKE:
            print(
                "Smoke scale: these numbers check that every step runs; they are not comparable to the paper's.",
                file=sys.stderr,
            )
