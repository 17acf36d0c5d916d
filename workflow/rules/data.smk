# Data layer: verified raw files (data/raw/<dataset>/) -> processed datasets
# (data/processed/<dataset>/<protocol>/). Declarations and preprocessing live in asynctm.datasets;
# each step writes to temporary names and renames when complete.


# Raw files from data/raw (if they verify), else the mirror (config data_mirror), else the official
# URL; MANIFEST.json (member hashes + raw digest) is written last. The mirror (MIRROR_ARGS) is deliberately not a
# param: where verified-identical files came from must not trigger reruns.
rule fetch:
    output:
        manifest=f"{DATA}/raw/{{dataset}}/MANIFEST.json",
    log:
        "logs/data/fetch_{dataset}.log",
    wildcard_constraints:
        dataset="|".join(DATASET_NAMES),
    conda:
        ENV
    shell:
        f"asynctm data fetch {{wildcards.dataset}} --raw-dir {word(DATA)}/raw/{{wildcards.dataset}}{MIRROR_ARGS}"
        " --log {log:q}"


# Re-verifies the raw members, prepares one protocol, writes the folder atomically; meta.json
# (counts, feature and class names, protocol, raw digest) stands for the folder.
rule prepare:
    input:
        manifest=f"{DATA}/raw/{{dataset}}/MANIFEST.json",
    output:
        meta=f"{DATA}/processed/{{dataset}}/{{protocol}}/meta.json",
    log:
        "logs/data/prepare_{dataset}_{protocol}.log",
    wildcard_constraints:
        dataset="|".join(DATASET_NAMES),
        protocol="|".join(PROTOCOL_NAMES),
    conda:
        ENV
    shell:
        "asynctm data prepare {wildcards.dataset} --protocol {wildcards.protocol}"
        f" --raw-dir {word(DATA)}/raw/{{wildcards.dataset}}"
        f" --out {word(DATA)}/processed/{{wildcards.dataset}}/{{wildcards.protocol}} --log {{log:q}}"
