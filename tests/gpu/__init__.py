"""Tests of the kernels: bit for bit against the NumPy reference on the CPU build and (marked `gpu`) on a GPU, their
properties over generated inputs, their compilation, and the CUDA host code on a simulated PyCUDA
(cuda_warp_sim.hpp runs the GPU side on simulated warps). The estimators' GPU tests stay beside their CPU tests in
unit/test_estimators.py: the GPU campaign collects GPU tests from every folder."""
