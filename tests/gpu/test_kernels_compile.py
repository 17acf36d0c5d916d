"""The one kernel source compiles for the GPU (nvcc, sm_75 and sm_90) and for the CPU, warning-free."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from asynctm.backends import KernelConfig, kernel_source

CONFIGS = {
    "classification": KernelConfig(n_classes=3, n_clauses=300, n_literals=6001, T=50, s=5.0),
    "regression_s1_noboost": KernelConfig(n_classes=1, n_clauses=64, n_literals=64, T=100, s=1.0, state_bits=5,
                                          boost_true_positive=False, regression=True),
    "sync_quadratic": KernelConfig(n_classes=1, n_clauses=64, n_literals=100, T=100, s=3.0, regression=True,
                                   tally="sync", regression_rule="quadratic"),
    "sync_classification": KernelConfig(n_classes=4, n_clauses=50, n_literals=333, T=20, s=5.0, tally="sync"),
    "warp_per_clause": KernelConfig(n_classes=3, n_clauses=300, n_literals=6001, T=50, s=5.0, threads_per_clause=32),
    "sync_8_per_clause": KernelConfig(n_classes=1, n_clauses=64, n_literals=100, T=100, s=3.0, regression=True,
                                      tally="sync", threads_per_clause=8),
    "block_per_clause": KernelConfig(n_classes=2, n_clauses=80, n_literals=204352, T=50, s=5.0, threads_per_clause=128),
    "sync_64_per_clause": KernelConfig(n_classes=4, n_clauses=50, n_literals=333, T=20, s=5.0, tally="sync",
                                       threads_per_clause=64),
    "block_1024_per_clause": KernelConfig(n_classes=2, n_clauses=80, n_literals=204352, T=50, s=5.0,
                                          threads_per_clause=1024),
    "shared_state_block_1024": KernelConfig(n_classes=2, n_clauses=80, n_literals=204352, T=50, s=5.0,
                                            threads_per_clause=1024, shared_state=True),
    "shared_state_warp": KernelConfig(n_classes=2, n_clauses=7000, n_literals=10000, T=80, s=27.0,
                                      threads_per_clause=32, shared_state=True),
    "sync_256_per_clause": KernelConfig(n_classes=1, n_clauses=64, n_literals=100, T=100, s=3.0, regression=True,
                                        tally="sync", regression_rule="quadratic", threads_per_clause=256),
}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_kernels_compile_with_nvcc(tmp_path, arch, name):
    src = tmp_path / "tm.cu"
    src.write_text(kernel_source(CONFIGS[name]))
    proc = subprocess.run(["nvcc", "-cubin", f"-arch={arch}", "-O3", "-Werror", "all-warnings", str(src), "-o",
                           str(tmp_path / "tm.cubin")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "tm.cubin").stat().st_size > 0


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_kernels_compile_for_cpu_without_warnings(tmp_path, name):
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no host C++ compiler")
    src = tmp_path / "tm.cu"
    src.write_text(kernel_source(CONFIGS[name]))
    proc = subprocess.run([cxx, "-O2", "-fopenmp", "-fPIC", "-shared", "-std=c++17", "-x", "c++", "-Wall", "-Wextra",
                           "-Werror", str(src), "-o", str(tmp_path / "tm.so")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_kernel_source_is_self_contained():
    text = kernel_source(CONFIGS["classification"])
    assert '#include "' not in text  # our own headers are inlined, so every cache key covers them
    assert "#define CLASSES 3" in text and "#define S_POOL_BITS 16" in text
