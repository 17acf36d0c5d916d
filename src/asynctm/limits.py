"""Bounds the kernels' 32-bit arithmetic sets on the estimators' parameters.

The library side (the estimators) and the pipeline's configuration check (``asynctm.config_check``) both read
them from here, so that importing the estimators pulls in nothing of the pipeline.
"""

# The kernels compute |target - v| and 2T in 32-bit signed integers (kernels/tm.cu, the update draw):
# T up to 2^30 - 1 keeps both in range.
T_MAX = 2**30 - 1
INT32_MAX = 2**31 - 1  # clause counts, batch sizes and thread counts are 32-bit ints in the kernels
