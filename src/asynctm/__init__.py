"""asynctm: the massively parallel and asynchronous Tsetlin Machine (Abeyrathna et al., ICML 2021).

Importing this package never touches a GPU: the CUDA backend is initialised on first use only.
"""

from . import affinity as _affinity  # noqa: F401  (notes the CPUs before scikit-learn's OpenMP runtime binds one)

__version__ = "0.1.0"

__all__ = ["TMClassifier", "TMRegressor", "__version__"]


def __getattr__(name):  # lazy, so `import asynctm.datasets` stays light
    if name in ("TMClassifier", "TMRegressor"):
        from . import estimators

        return getattr(estimators, name)
    raise AttributeError(f"module 'asynctm' has no attribute {name!r}")
