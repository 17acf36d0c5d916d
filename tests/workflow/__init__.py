"""Tests of the project as a whole: the Snakemake workflow, the command line end to end, SLURM, the documentation's
commands, packaging, style and import architecture, and the GPU campaign's dress rehearsal."""
