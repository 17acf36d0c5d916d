"""The tests, a package so that test modules import their shared helpers (tests.helpers) and each other by
full name. unit/: the library and the pipeline's modules; workflow/: Snakemake, the command line, SLURM, the
documentation's commands, packaging and style; gpu/: the kernels against the reference, on a GPU or its simulator."""
