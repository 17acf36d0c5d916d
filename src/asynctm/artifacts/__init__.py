"""The paper's artifacts (Tables 3-5, the figures of Section 4, the results summary) built from the
run records of results/README.md, next to the paper's published numbers (paper_tables/reference/).

    python -m asynctm.artifacts ARTIFACT --results DIR --config FILE --out DIR [--host-gpu yes|no]

``build`` is the same from Python. The names, their inputs and their output files are in ``catalog``
(which imports neither pandas nor matplotlib, for the Snakemake rules); the tables in ``tables``, the
figures in ``figures``; records are read by ``asynctm.store.load_records``.
"""

from __future__ import annotations

from pathlib import Path

from ..io import write_text_atomic
from .catalog import ARTIFACTS, CLAIMS, FIGURES, SUMMARIES, TABLES, output_paths

__all__ = ["ARTIFACTS", "CLAIMS", "FIGURES", "SUMMARIES", "TABLES", "build", "load_config", "output_paths"]


def load_config(path) -> dict:
    import yaml

    with open(path) as f:
        config = yaml.safe_load(f)
    if not isinstance(config, dict) or "experiments" not in config:
        raise ValueError(f"{path}: not a pipeline config (no 'experiments:' section)")
    return config


def build(name: str, results_dir, config: dict, out_dir, host_gpu: bool, reference_path=None,
          records=None) -> list[str]:
    """Build one artifact from the records under ``results_dir`` (``records``: only these files there, e.g. a
    rule's declared inputs); returns the files written (sorted). Every file is written atomically."""
    from ..store import load_records
    from . import catalog, figures, tables
    from .reference import DEFAULT_REFERENCE, load_reference

    catalog.check_name(name)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if name in CLAIMS:  # the verdicts (claims.py): records, the paper's numbers and the config's claims: thresholds
        from . import claims, forest

        build_claims = forest.build if name == "fig_claims_forest" else claims.build
        return build_claims(results_dir, config, out, load_reference(reference_path or DEFAULT_REFERENCE), records)
    paths = output_paths(name, out)
    records = load_records(results_dir, experiments=catalog.experiments(name, config), files=records)
    if name in FIGURES:
        return figures.save(figures.FIGURE_FUNCTIONS[name](records, config, host_gpu), paths)
    reference = load_reference(reference_path or DEFAULT_REFERENCE)
    if name in SUMMARIES:
        write_text_atomic(paths["md"], tables.results_summary(records, config, reference, host_gpu))
        return sorted(paths.values())
    from .evidence_host import load as load_host_timing

    # Tables 3 and 5 take speed-ups of one host from the same-host timing run where the main records hold none
    host_timing = (load_host_timing(results_dir),) if name in tables.HOST_TIMING_TABLES else ()
    if name == "table4_svm_time":  # why the SVM fits ran on CPU cores, where the workflow's folder has that check
        host_timing = (tables.load_svm_gpu_builds(),)
    table = getattr(tables, name)(records, config, reference, host_gpu, *host_timing)
    write_text_atomic(paths["csv"], table.frame.to_csv(index=False, float_format="%.10g", lineterminator="\n"))
    write_text_atomic(paths["md"], table.markdown)
    write_text_atomic(paths["tex"], table.latex)
    write_text_atomic(paths["caption"], table.caption)
    return sorted(paths.values())
