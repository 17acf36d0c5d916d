"""The record store: where run records live, the one gate every record passes before it counts, and every way of
reading them. Everything that reads a run record (the tables, figures, report, claims and ablation of
asynctm.artifacts, the estimates of asynctm.experiments) asks this package; of those it imports only the plan
(asynctm.experiments.plan: the names of implementations, settings and ablation variants; pyproject.toml's import
contracts place it below the store).

- :mod:`.layout`: the results layout (results/README.md) below a results root,
  ``<experiment>/<impl>/<params>/seed<k>.json`` and ``ablation/<experiment>/<impl>/<params>/<variant>/seed<k>.json``
  (the names in them are asynctm.experiments.plan's, the layer below): what a path says (:func:`layout`), the
  record files below a root (:func:`record_files`, :func:`ablation_files`, :func:`main_files`), and
  :class:`RecordError`, the one error of a record that may not count.
- :mod:`.gate`: :func:`check_record`, the record's JSON Schema (workflow/schemas/record.schema.yaml, versioned;
  results/SCHEMA.md is generated from it) and what a schema cannot say (a canonical file name, the record agreeing
  with its path and the configuration, finite values, consistent times), each refusal one line naming the file, the
  field and the fix;
  :func:`read_record`, :func:`read_records`, :func:`problems` and :func:`gate` read through it.
- :mod:`.frame`: records as rows: :func:`load_records` (the pandas DataFrame of the tables, figures and claims),
  :func:`ablation_rows` (the tally ablation's), and what a record says beyond its fields (:func:`host_identity`,
  :func:`busy`, :func:`dirty`, :func:`steady_epoch_time`, :func:`reduced_protocol`).

``python -m asynctm.store check`` gives the gate's verdict on every record below a results folder.
"""

from __future__ import annotations

from .frame import (
                    BASE_COLUMNS,
                    DISTURBED_LOAD_ABOVE_CORES,
                    HOST_RULE,
                    HOST_RULE_SHORT,
                    LAST_EPOCHS,
                    STEADY_NOTE,
                    ablation_rows,
                    busy,
                    dirty,
                    host_identity,
                    last_epochs_means,
                    load_records,
                    record_row,
                    reduced_protocol,
                    steady_epoch_time,
)
from .gate import (
                    SCHEMA_FILE,
                    SCHEMA_VERSION,
                    TIME_SUM_RTOL,
                    check_record,
                    gate,
                    problems,
                    read_record,
                    read_records,
                    schema,
)
from .layout import (
                    CANONICAL_SEED_FILE,
                    FIX_RERUN,
                    KIND_OF_IMPL,
                    SEED_FILE,
                    RecordError,
                    ablation_files,
                    layout,
                    main_files,
                    record_files,
                    refuse,
                    root_of,
)

__all__ = [
    "BASE_COLUMNS", "CANONICAL_SEED_FILE", "DISTURBED_LOAD_ABOVE_CORES", "FIX_RERUN", "HOST_RULE", "HOST_RULE_SHORT",
    "KIND_OF_IMPL", "LAST_EPOCHS", "SCHEMA_FILE", "SCHEMA_VERSION", "SEED_FILE", "STEADY_NOTE", "TIME_SUM_RTOL",
    "RecordError", "ablation_files", "ablation_rows", "busy", "check_record", "dirty", "gate", "host_identity",
    "last_epochs_means", "layout", "load_records", "main_files", "problems", "read_record", "read_records",
    "record_files", "record_row", "reduced_protocol", "refuse", "root_of", "schema", "steady_epoch_time",
]
