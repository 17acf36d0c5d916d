"""Tests of the library and the pipeline's modules, one module (or one subject) a file."""
