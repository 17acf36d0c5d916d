# The paper's figures (Section 4) from the run records, built by `asynctm artifacts` (one process
# per job): {FIGURES_DIR}/<name>.{png,pdf} at column width and <name>.caption.txt naming the
# hardware, the records used and the implementations not run (figures/ at paper scale, results/smoke/figures/
# at smoke scale); `snakemake figures` builds all.
#
# Include after tables.smk (it defines ARTIFACTS_CONFIG and ARTIFACTS_LOGS). Records and the job: as tables.smk says.
from pathlib import Path

from asynctm.artifacts import catalog
from asynctm.artifacts.rules import artifact_command, inputs_manifest_path, record_input_with_stamp

for _name in catalog.FIGURES:

    rule:
        name:
            _name
        input:
            unpack(record_input_with_stamp(_name, config, record_paths, RESULTS, TABLES_DIR)),
            config=ARTIFACTS_CONFIG,
        output:
            png=report(f"{FIGURES_DIR}/{_name}.png", category="Figures", caption=f"../report/{_name}.rst"),
            pdf=f"{FIGURES_DIR}/{_name}.pdf",
            caption=f"{FIGURES_DIR}/{_name}.caption.txt",
            inputs=inputs_manifest_path(_name, TABLES_DIR),
        log:
            f"{ARTIFACTS_LOGS}/{_name}.log",
        conda:
            ENV
        params:
            artifact=_name,
            host_gpu=HOST_GPU,
        shell:
            # the name through params: a job evaluates this again when it runs, when _name holds the loop's last
            artifact_command("{params.artifact}", RESULTS, FIGURES_DIR, HOST_GPU, reference=False)


# Every figure (PNG, PDF, caption).
rule figures:
    input:
        [path for name in catalog.FIGURES for path in catalog.output_paths(name, FIGURES_DIR).values()],
