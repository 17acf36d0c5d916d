"""The paper's experiments as functions that produce run records (layout and fields: results/README.md).

The Snakemake rules in workflow/rules/experiments.smk call ``python -m asynctm.experiments``; every run
writes its record atomically, so an interrupted run leaves no record that looks finished.
"""
