"""The SVM baseline of the paper's Table 4: ThunderSVM's GPU build, else its CPU build, else scikit-learn.

``run_svm(task, X_train, y_train, X_test, y_test, params, seed)`` fits one SVM and returns the parts of a run
record (results/README.md): ``implementation``, ``hyperparameters``, ``final``, ``metric_names``, ``timing``.

Which library runs
------------------

In this order, the first one that can run here (:func:`available_libraries` says why each cannot):

1. ``thundersvm-gpu``: the ``thundersvm`` distribution on PyPI (ThunderSVM's GPU build), on CUDA GPU 0. Its
   wheel (0.3.12) is built against CUDA 9; on current systems the import fails loading ``libthundersvm.so``
   (``libcusparse.so.9.0`` missing): that failure is caught and recorded. Needs a CUDA GPU (checked first, so
   that the library is never asked to run without one).
2. ``thundersvm-cpu``: the ``thundersvm-cpu`` distribution (the same Python package ``thundersvm``, built with
   OpenMP instead of CUDA), on ``n_threads`` CPU threads (ThunderSVM's ``n_jobs``).
3. ``sklearn``: scikit-learn's ``SVC``/``SVR`` (libsvm), single-threaded.

Both ThunderSVM builds import as ``thundersvm``, so at most one is installed in one environment. Which one is
loaded is decided from the installed distributions (``importlib.metadata``: ``thundersvm`` = GPU build,
``thundersvm-cpu`` = CPU build; when both are installed, the one whose RECORD lists the loaded
``libthundersvm.so`` with a matching sha256) and cross-checked against the library itself (does the loaded
``.so`` call the CUDA runtime, ``cudaMalloc``?); both pieces of evidence are recorded. Checked with the real
GPU wheel installed beside the CPU one: it is reported as the GPU build that cannot be loaded. A library can be
forced with ``library=`` (the pipeline passes an experiment's ``svm_library`` from the config) or
``$ASYNCTM_SVM_LIBRARY`` (``thundersvm-gpu``, ``thundersvm-cpu``, ``sklearn``); a forced library that cannot run
is an error, never a silent fallback.

Settings (the same numbers reach every library)
------------------------------------------------

The authors' repository (cair/ICML-Massively-Parallel-and-Asynchronous-Tsetlin-Machine-Architecture) holds
no SVM code and the paper gives only ThunderSVM's training times, so the settings are ours, in
``config/config.yaml`` (``svm:``):

- classification and novelty (an ``SVC`` on the known classes, like the TM record): ``kernel=linear, C=1``.
  A linear kernel is the standard SVM for sparse bag-of-words text; ``C=1`` is both libraries' default.
- regression: ``SVR(kernel=rbf, C=1, epsilon=0.1)``, both libraries' defaults; targets in their own units
  (not scaled; the MAE/RMSE are in target units like the TM's).
- ``gamma`` (rbf only): sklearn's ``'scale'`` rule, ``1 / (n_features * X_train.var())`` (variance over all
  entries of the training matrix; 1 when it is 0), computed here and passed as a number to every library:
  ThunderSVM's own default (``'auto'`` = ``1/n_features``) differs from sklearn's. A number in ``params``
  overrides it. Not used (recorded as null) for the linear kernel.
- ``tol=1e-3`` (both libraries' default). Everything else at each library's defaults, recorded in
  ``implementation.library_arguments`` (they differ in ways that only affect speed: ThunderSVM runs without
  shrinking and with its own kernel cache; libsvm shrinks and caches 200 MB).
- Multi-class: both do one-vs-one internally; every SVM experiment of the paper is binary anyway.
- ``seed`` is recorded but has no effect: neither library draws random numbers for ``SVC``/``SVR`` without
  probability estimates.

Input
-----

Features are the experiment's 0/1 matrix. Classification labels are mapped to ``0..C-1`` (sorted) for every
library and mapped back after ``predict``.

- ThunderSVM gets a dense C-contiguous ``float64`` array (its wrapper converts to float32 itself), in both
  builds. Its sparse path cannot be used with thundersvm-cpu 0.3.3: that wrapper's ``_sparse_fit`` hands the
  labels to the C function as ``int32`` where it expects ``float*`` (checked: a separable problem comes out at
  50% accuracy, an SVR finds no support vector and the wrapper then crashes; the GPU wheel 0.3.12 passes
  float32), and it overwrites the caller's ``X.data``. Dense is also what the authors' scripts produce.
  The dense hand-over costs the conversion (untimed), the wrapper's element-by-element copy of the test matrix
  into a ctypes array (inside ``predict_s``: about 0.5 s per 10^7 entries) and memory: ``12 * n * n_features``
  bytes for the training matrix (float64 plus the wrapper's float32 copy), and the library's own copies on top:
  SemEval (6000 x 102176) was killed for memory at 23 GB. Where the dense input would not fit
  (``DENSE_BYTES_PER_ENTRY``, measured, against the memory available), an automatic choice falls to
  scikit-learn's sparse path and the record says why in ``implementation.skipped``.
- scikit-learn gets CSR ``float64`` when ``X`` is sparse (libsvm's sparse path), dense ``float64`` otherwise.

Times: ``fit_s`` is the library's ``fit`` call, ``predict_s`` its ``predict`` on the test set, both with
``time.perf_counter`` (the ThunderSVM calls return host arrays, so GPU work has finished); our input
conversion happens before and is not timed.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import hashlib
import importlib.metadata as md
import importlib.util
import numbers
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..experiments.metrics import F1_KINDS, evaluate
from ..provenance import dist_version

TASKS = ("classification", "regression", "novelty")
LIBRARIES = ("thundersvm-gpu", "thundersvm-cpu", "sklearn")
KERNELS = ("linear", "rbf")
ENV_LIBRARY = "ASYNCTM_SVM_LIBRARY"
_THUNDERSVM_DISTS = {"thundersvm": "gpu", "thundersvm-cpu": "cpu"}
_PARAM_KEYS = {"classification": {"kernel", "C", "gamma", "tol"},
               "regression": {"kernel", "C", "epsilon", "gamma", "tol"}}


class SVMUnavailableError(RuntimeError):
    """The requested SVM library cannot run here."""


# -- which library ------------------------------------------------------------------------------------------
def _record_sha256(path: Path) -> str:
    """The file's sha256 as wheel RECORD files write it (urlsafe base64, no padding)."""
    digest = hashlib.sha256(path.read_bytes()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _owning_distributions(lib_path: Path) -> list[str]:
    """The installed ThunderSVM distributions whose RECORD lists ``lib_path`` with a matching hash."""
    owners, actual = [], None
    for name in _THUNDERSVM_DISTS:
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        for f in dist.files or ():
            if f.name != lib_path.name:
                continue
            try:
                located = Path(dist.locate_file(f)).resolve()
            except OSError:
                continue
            if located != lib_path:
                continue
            if f.hash is not None and f.hash.mode == "sha256":
                actual = actual or _record_sha256(lib_path)
                if f.hash.value != actual:
                    continue
            owners.append(name)
    return owners


_SO_NAMES = {"linux": "libthundersvm.so", "win32": "thundersvm.dll", "darwin": "libthundersvm.dylib"}


def _build_of(so_path: Path, info: dict) -> None:
    """Fill ``distribution``, ``build``, ``version``, ``build_evidence`` (and ``so_calls_cuda``) from the
    library file that ``import thundersvm`` loads (or would load)."""
    try:  # the CUDA runtime API (cudart is linked statically into the GPU wheel, which needs libcusparse)
        info["so_calls_cuda"] = b"cudaMalloc" in so_path.read_bytes()
    except OSError:
        info["so_calls_cuda"] = None
    owners = _owning_distributions(so_path)
    installed = [n for n, v in info["distributions"].items() if v]
    if len(owners) == 1:
        info["distribution"] = owners[0]
        info["build_evidence"] = f"{so_path.name} is listed, hash matching, in the RECORD of {owners[0]}"
    elif not owners and len(installed) == 1:
        info["distribution"] = installed[0]
        info["build_evidence"] = "the only installed ThunderSVM distribution (its RECORD does not list the library)"
    cuda_so = info["so_calls_cuda"]
    if info["distribution"] is not None:
        info["build"] = _THUNDERSVM_DISTS[info["distribution"]]
        info["version"] = info["distributions"][info["distribution"]]
        if cuda_so is not None and cuda_so != (info["build"] == "gpu"):
            info["build_warning"] = (f"distribution {info['distribution']} ({info['build']} build) but its library "
                                     f"{'calls' if cuda_so else 'does not call'} the CUDA runtime (cudaMalloc)")
    elif cuda_so is not None:
        info["build"] = "gpu" if cuda_so else "cpu"
        info["build_evidence"] = (f"owner ambiguous ({owners or 'no RECORD lists it'}); the library "
                                  f"{'calls' if cuda_so else 'does not call'} the CUDA runtime (cudaMalloc)")


@functools.lru_cache(maxsize=1)
def thundersvm_info() -> dict:
    """What ThunderSVM is installed and loadable here: ``{distributions: {name: version}, importable, error,
    build ("gpu"/"cpu"/None), distribution, version, lib_path, so_calls_cuda, build_evidence}``.

    The build is read from the library file the ``thundersvm`` package loads, found before importing it, so
    it is known also when the import fails (the CUDA-9 GPU wheel)."""
    info: dict = {"distributions": {name: dist_version(name) for name in _THUNDERSVM_DISTS},
                  "importable": False, "error": None, "build": None, "distribution": None, "version": None,
                  "lib_path": None}
    try:
        spec = importlib.util.find_spec("thundersvm")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        info["error"] = "not installed (no `thundersvm` package: neither the `thundersvm` nor the `thundersvm-cpu` " \
                        "distribution)"
        return info
    so_path = Path(list(spec.submodule_search_locations)[0]) / _SO_NAMES.get(sys.platform, "libthundersvm.so")
    if so_path.is_file():
        info["lib_path"] = str(so_path.resolve())
        _build_of(so_path.resolve(), info)
    try:
        import thundersvm  # noqa: F401 - loads the library

        # The submodule, not the CDLL object of the same name that the package re-exports.
        loaded = Path(sys.modules["thundersvm.thundersvm"].lib_path).resolve()
    except Exception as exc:  # noqa: BLE001 - the CUDA-9 GPU wheel fails here with OSError
        info["error"] = f"import failed: {type(exc).__name__}: {exc}"
        return info
    info["importable"] = True
    if info["lib_path"] != str(loaded):  # it loaded another file (e.g. from a build folder)
        for key in ("distribution", "build", "version", "build_evidence", "build_warning"):
            info.pop(key, None)
        info.update(distribution=None, build=None, version=None, lib_path=str(loaded))
        _build_of(loaded, info)
    return info


def available_libraries() -> dict[str, str]:
    """``{library: "ok" or why it cannot run here}`` for each of :data:`LIBRARIES`, in order."""
    from ..backends import cuda_available

    info = thundersvm_info()
    out = {}
    for lib, build in (("thundersvm-gpu", "gpu"), ("thundersvm-cpu", "cpu")):
        dist = "thundersvm" if build == "gpu" else "thundersvm-cpu"
        if info["build"] != build:
            if info["build"] is None:
                out[lib] = f"ThunderSVM {info['error'] or 'build could not be determined'}"
            else:
                out[lib] = (f"not the build installed: the `thundersvm` package that Python finds here is "
                            f"ThunderSVM's {info['build']} build (`{info['distribution']}` {info['version']}), not "
                            f"`{dist}`")
        elif not info["importable"]:
            out[lib] = f"`{dist}` {info['version']} is installed but cannot be loaded: {info['error']}"
        elif build == "gpu" and not cuda_available():
            out[lib] = f"`{dist}` {info['version']} loads, but no CUDA GPU was found"
        else:
            out[lib] = "ok"
    try:
        import sklearn.svm  # noqa: F401

        out["sklearn"] = "ok"
    except Exception as exc:  # noqa: BLE001
        out["sklearn"] = f"scikit-learn not importable: {exc}"
    return out


def select_library(library: str | None = None) -> tuple[str, dict, bool]:
    """``(library, {skipped library: reason}, forced)``: the forced one (argument, else $ASYNCTM_SVM_LIBRARY)
    or the first of :data:`LIBRARIES` that can run. Raises :class:`SVMUnavailableError` when none (or the
    forced one) cannot."""
    forced = library if library is not None else (os.environ.get(ENV_LIBRARY) or None)
    status = available_libraries()
    if forced is not None:
        if forced not in LIBRARIES:
            raise ValueError(f"unknown SVM library {forced!r}; known: {', '.join(LIBRARIES)}")
        if status[forced] != "ok":
            raise SVMUnavailableError(f"SVM library {forced} was requested but cannot run here: {status[forced]}")
        return forced, {}, True
    skipped = {}
    for lib in LIBRARIES:
        if status[lib] == "ok":
            return lib, skipped, False
        skipped[lib] = status[lib]
    raise SVMUnavailableError("no SVM library can run here: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))


# -- inputs and hyperparameters -------------------------------------------------------------------------------
def scale_gamma(X) -> float:
    """sklearn's ``gamma='scale'``: ``1 / (n_features * X.var())`` over all entries (1.0 when the variance is 0)."""
    n, d = X.shape
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        mean = float(X.sum()) / (n * d)
        var = float(X.multiply(X).sum()) / (n * d) - mean * mean
    else:
        var = float(np.asarray(X, dtype=np.float64).var())
    return 1.0 / (d * var) if var > 0 else 1.0


def _positive_number(name, value, allow_zero=False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value) \
            or (value < 0 if allow_zero else value <= 0):
        raise ValueError(f"{name} must be a finite number {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return float(value)


def resolve_params(task: str, params: dict, X_train) -> dict:
    """Our hyperparameters from ``params`` (config ``svm.<task>``), validated, with ``gamma`` made explicit."""
    kind = "regression" if task == "regression" else "classification"
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict, got {type(params).__name__}")
    unknown = set(params) - _PARAM_KEYS[kind]
    if unknown:
        raise ValueError(f"unknown SVM parameter(s) for {kind}: {sorted(unknown)}; known: {sorted(_PARAM_KEYS[kind])}")
    kernel = params.get("kernel")
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; supported by every library here: {', '.join(KERNELS)}")
    hp = {"kernel": kernel, "C": _positive_number("C", params.get("C", 1.0)),
          "tol": _positive_number("tol", params.get("tol", 1e-3))}
    if kind == "regression":
        hp["epsilon"] = _positive_number("epsilon", params.get("epsilon", 0.1), allow_zero=True)
    gamma = params.get("gamma", "scale")
    if kernel == "linear":
        hp["gamma"], hp["gamma_rule"] = None, "not used by the linear kernel"
    elif gamma == "scale":
        hp["gamma"] = scale_gamma(X_train)
        hp["gamma_rule"] = "scale: 1 / (n_features * X_train.var()), computed here, passed as a number"
    else:
        hp["gamma"], hp["gamma_rule"] = _positive_number("gamma", gamma), "given in params"
    return hp


def _check_inputs(task, X_train, y_train, X_test, y_test):
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    for name, X in (("X_train", X_train), ("X_test", X_test)):
        if not (sp.issparse(X) or isinstance(X, np.ndarray)) or len(X.shape) != 2:
            raise ValueError(f"{name} must be a 2-D numpy array or scipy sparse matrix, got "
                             f"{type(X).__name__} of shape {getattr(X, 'shape', None)}")
        if X.shape[0] < 1 or X.shape[1] < 1:
            raise ValueError(f"{name} is empty (shape {X.shape})")
        data = X.data if sp.issparse(X) else X
        if data.dtype.kind not in "biuf" or (data.dtype.kind == "f" and not np.all(np.isfinite(data))):
            raise ValueError(f"{name} must be numeric and finite (dtype {data.dtype})")
    if X_train.shape[1] != X_test.shape[1]:
        raise ValueError(f"X_train has {X_train.shape[1]} features but X_test has {X_test.shape[1]}")
    ys = []
    for name, y, X in (("y_train", y_train, X_train), ("y_test", y_test, X_test)):
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"{name} must be 1-D with one target per row of {name.replace('y', 'X')} "
                             f"({X.shape[0]}), got shape {y.shape}")
        if y.dtype.kind not in "biuf":
            raise ValueError(f"{name} must be numeric, got dtype {y.dtype}")
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
            raise ValueError(f"{name} contains NaN or infinite values")
        ys.append(y)
    return ys


# Peak bytes per training-matrix entry of a ThunderSVM fit on dense input, measured: SemEval (6000 x 102,176,
# linear SVC, thundersvm-cpu 0.3.3) was killed for memory at 23 GB resident, about 37 bytes per entry (our
# float64 copy, the wrapper's float32 copy and the library's own kernel rows). Rounded up.
DENSE_BYTES_PER_ENTRY = 40
# Share of the memory available at the start that the dense hand-over may take.
DENSE_MEMORY_SHARE = 0.6


def _available_memory() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (None where unknown)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _dense_fits(lib: str, skipped: dict, forced: bool, X_train, X_test) -> tuple[str, dict]:
    """ThunderSVM needs the whole matrix dense (its sparse path is broken, see the module docstring): where that
    would not fit in memory, an automatic choice falls to scikit-learn's sparse path, with the reason recorded
    in ``skipped``; a forced ThunderSVM is refused with a one-line error instead of being killed for memory."""
    need = DENSE_BYTES_PER_ENTRY * X_train.shape[0] * X_train.shape[1] + 12 * X_test.shape[0] * X_test.shape[1]
    avail = _available_memory()
    if avail is None or need <= DENSE_MEMORY_SHARE * avail:
        return lib, skipped
    why = (f"dense input of {X_train.shape[0]} x {X_train.shape[1]} needs about {need / 2**30:.1f} GiB, more than "
           f"{DENSE_MEMORY_SHARE:.0%} of the {avail / 2**30:.1f} GiB available (its sparse path is broken)")
    if forced:
        raise SVMUnavailableError(f"SVM library {lib} was requested but cannot run this dataset here: {why}; "
                                  "free memory, or unset the forced library to use scikit-learn's sparse path")
    if available_libraries().get("sklearn") != "ok":
        raise SVMUnavailableError(f"{lib}: {why}, and scikit-learn cannot run here")
    return "sklearn", {**skipped, lib: why}


def _for_thundersvm(X) -> np.ndarray:
    # Dense float64, C order: the wrapper's dense path (its sparse path is broken, see the module docstring).
    return np.ascontiguousarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)


def _for_sklearn(X):
    if sp.issparse(X):
        return sp.csr_matrix(X, dtype=np.float64)
    return np.ascontiguousarray(X, dtype=np.float64)


@contextlib.contextmanager
def _stdout_to_stderr():
    """ThunderSVM prints to stdout from Python ("Training failed!") and C; keep stdout for our own output."""
    saved = sys.stdout
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stdout = saved


def _device_and_threads(lib: str, n_threads: int) -> tuple[str, int | None]:
    from ..backends.cpu import cpu_model

    if lib == "thundersvm-gpu":
        try:
            from ..backends.cuda import device_description

            return f"CUDA GPU 0: {device_description()}", n_threads
        except Exception:  # noqa: BLE001
            return "CUDA GPU 0", n_threads
    if lib == "thundersvm-cpu":
        return f"CPU ({cpu_model()}), {n_threads} threads", n_threads
    return f"CPU ({cpu_model()}), 1 thread", 1


# -- the run --------------------------------------------------------------------------------------------------
def run_svm(task: str, X_train, y_train, X_test, y_test, params: dict, seed: int, f1: str = "macro", *,
            library: str | None = None, n_threads: int | None = None) -> dict:
    """Fit one SVM on ``(X_train, y_train)``, evaluate on ``(X_test, y_test)``; the record parts
    ``{implementation, hyperparameters, final, metric_names, timing: {fit_s, predict_s}}``.

    ``task``: ``classification``/``novelty`` (SVC) or ``regression`` (SVR). ``params``: config ``svm.<task>``
    (``kernel``, ``C``, regression also ``epsilon``; optional ``gamma`` (number or ``"scale"``), ``tol``).
    ``library``: force one of :data:`LIBRARIES` (else ``$ASYNCTM_SVM_LIBRARY``, else the first that runs).
    ``n_threads``: ThunderSVM's CPU threads (default: all usable cores); scikit-learn uses one.
    """
    y_train, y_test = _check_inputs(task, X_train, y_train, X_test, y_test)
    if f1 not in F1_KINDS:
        raise ValueError(f"f1 must be one of {F1_KINDS}, got {f1!r}")
    regression = task == "regression"
    hp = resolve_params(task, params, X_train)
    if n_threads is None:
        from ..backends.cpu import default_threads

        n_threads = default_threads()
    if isinstance(n_threads, bool) or not isinstance(n_threads, numbers.Integral) or n_threads < 1:
        raise ValueError(f"n_threads must be a positive integer, got {n_threads!r}")
    n_threads = int(n_threads)

    classes = None
    if regression:
        y_fit = y_train.astype(np.float64)
    else:
        if y_train.dtype.kind == "f" and not np.all(y_train == np.round(y_train)):
            raise ValueError("classification labels must be integers")
        classes = np.unique(y_train)
        if len(classes) < 2:
            raise ValueError(f"y_train must contain at least 2 classes, got {classes.tolist()}")
        y_fit = np.searchsorted(classes, y_train).astype(np.float64)

    lib, skipped, forced = select_library(library)
    if lib.startswith("thundersvm"):
        lib, skipped = _dense_fits(lib, skipped, forced, X_train, X_test)
    est_name = "SVR" if regression else "SVC"
    args = {"kernel": hp["kernel"], "C": hp["C"], "tol": hp["tol"]}
    if regression:
        args["epsilon"] = hp["epsilon"]
    if hp["gamma"] is not None:
        args["gamma"] = hp["gamma"]

    impl: dict = {"library_choice": lib, "forced": forced, "skipped": skipped, "class": est_name,
                  "seed": seed, "random_numbers": "none drawn (no probability estimates); the seed has no effect"}
    if forced and library is None:
        impl["forced_by"] = f"${ENV_LIBRARY}"
    if lib.startswith("thundersvm"):
        import thundersvm

        info = thundersvm_info()
        args.update(n_jobs=n_threads, verbose=False)
        if lib == "thundersvm-gpu":
            args["gpu_id"] = 0
        model = getattr(thundersvm, est_name)(**args)
        Xf, Xt = _for_thundersvm(X_train), _for_thundersvm(X_test)
        impl.update(library="ThunderSVM", distribution=info["distribution"], version=info["version"],
                    build=info["build"], build_evidence=info.get("build_evidence"), lib_path=info.get("lib_path"),
                    so_calls_cuda=info.get("so_calls_cuda"),
                    input="dense float64, C order (thundersvm-cpu 0.3.3's sparse path passes the labels as int32 "
                          "to a float* argument)")
        if info.get("build_warning"):
            impl["build_warning"] = info["build_warning"]
    else:
        import sklearn
        from sklearn import svm as sksvm

        model = getattr(sksvm, est_name)(**args)
        Xf, Xt = _for_sklearn(X_train), _for_sklearn(X_test)
        impl.update(library="scikit-learn", distribution="scikit-learn", version=sklearn.__version__, build="cpu",
                    input="CSR float64" if sp.issparse(Xf) else "dense float64")
    impl["device"], impl["threads"] = _device_and_threads(lib, n_threads)
    impl["library_arguments"] = {k: v for k, v in model.get_params().items()}

    with _stdout_to_stderr():
        t0 = time.perf_counter()
        fitted = model.fit(Xf, y_fit)
        fit_s = time.perf_counter() - t0
        if lib.startswith("thundersvm") and (fitted is None or getattr(model, "_train_succeed", [1])[0] == -1):
            raise RuntimeError(f"ThunderSVM ({lib}) reported that training failed")
        t0 = time.perf_counter()
        pred = np.asarray(model.predict(Xt))
        predict_s = time.perf_counter() - t0
    if pred.shape != (Xt.shape[0],):
        raise RuntimeError(f"{lib} returned predictions of shape {pred.shape} for {Xt.shape[0]} test rows")

    if regression:
        pred = pred.astype(np.float64)
        if not np.all(np.isfinite(pred)):
            raise RuntimeError(f"{lib} returned non-finite predictions")
    else:
        idx = np.rint(pred.astype(np.float64))
        if not np.all((idx >= 0) & (idx < len(classes)) & (np.abs(pred - idx) < 1e-6)):
            raise RuntimeError(f"{lib} returned labels outside 0..{len(classes) - 1}: {np.unique(pred)[:10]}")
        pred = classes[idx.astype(np.int64)]
        impl["labels"] = f"mapped to 0..{len(classes) - 1} (sorted classes) for fitting, mapped back after predict"
    final, names = evaluate(task, y_test, pred, f1)
    try:
        impl["n_support_vectors"] = int(len(model.support_))
    except Exception:  # noqa: BLE001 - informative only
        impl["n_support_vectors"] = None

    hyper = {k: hp[k] for k in ("kernel", "C", "epsilon", "gamma", "gamma_rule", "tol") if k in hp}
    return {"implementation": impl, "hyperparameters": hyper, "final": final, "metric_names": names,
            "timing": {"fit_s": fit_s, "predict_s": predict_s}}

