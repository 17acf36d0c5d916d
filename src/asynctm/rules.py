"""Readable Tsetlin Machine models: clauses as rules over named features, and a pure-Python evaluator.

A trained :class:`asynctm.TMClassifier` or :class:`asynctm.TMRegressor` is a set of clauses, each an AND of
literals (a 0/1 feature, or its negation) that votes for or against its class when it fires. The estimators
show them (``rules()``), say which fired for one example (``explain(x)``) and export them
(``export_rules(path)``) as a JSON document that :class:`RuleModel` evaluates with the Python standard library
alone, to the same predictions. The document (docs/library.md, "The rules file"):

- ``format`` ``"asynctm-rules"``, ``version`` 1, ``estimator`` (``"TMClassifier"`` or ``"TMRegressor"``), ``T``;
- ``features``: the names of the input features, in column order (a row is a list of that length, or a
  mapping from names or column numbers to values, absent ones 0);
- ``inputs``: the 0/1 features the clauses read, each ``{"feature": column, "threshold": t or null, "name",
  "negated_name"}``: 1 where the column's value is ``> t``; with ``null`` the column must be 0 or 1 and is used
  as it is;
- ``clauses``: the clauses that include at least one literal (an empty clause never fires at inference), each
  ``{"output", "clause", "polarity", "positive", "negated", "rule"}``: it fires where every input listed in
  ``positive`` is 1 and every one in ``negated`` is 0, and then adds ``polarity`` (+1 or -1) to the sum of its
  output;
- a classifier: ``classes`` (one output each, in order) and ``class_dtype`` (the NumPy dtype of ``classes_``;
  datetimes are ISO strings, timedeltas integer counts of their unit, bytes Latin-1 strings); it predicts the
  class of the largest sum, each clipped to ``[-T, T]`` (the first on ties);
- a regressor: ``y_range`` ``[y_min, y_max]``; it predicts ``v / T * (y_max - y_min) + y_min`` with ``v`` the
  sum clipped to ``[-T, T]``.
"""

from __future__ import annotations

import json
import math
import numbers

FORMAT = "asynctm-rules"
VERSION = 1
_ESTIMATORS = ("TMClassifier", "TMRegressor")


def clause_text(positive: list[str], negated: list[str]) -> str:
    """A clause as a rule: its literals joined by AND (an empty clause, which never fires at inference, reads
    ``"(empty: never fires)"``)."""
    literals = [*positive, *negated]
    return " AND ".join(literals) if literals else "(empty: never fires)"


class RuleModel:
    """A model exported by ``export_rules``, evaluated in pure Python: ``predict``, ``class_sums`` and
    ``explain`` give what the estimator's methods of the same names give (rows as lists or mappings)."""

    def __init__(self, document: dict):
        self.document = _checked(document)
        d = self.document
        self.estimator = d["estimator"]
        self.T = d["T"]
        self.features = list(d["features"])
        self.inputs = d["inputs"]
        self.clauses = d["clauses"]
        self.classes = d.get("classes")
        self.n_outputs = len(self.classes) if self.classes is not None else 1
        self._column = {name: i for i, name in enumerate(self.features)}

    @classmethod
    def load(cls, path) -> RuleModel:
        """The model in a JSON file written by ``export_rules``; ValueError (one line) for anything else."""
        try:
            with open(path, encoding="utf-8") as fh:
                document = json.load(fh)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not a rules file: not valid JSON ({e})") from None
        try:
            return cls(document)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None

    # -- evaluation ----------------------------------------------------------------------------------------
    def _row(self, row) -> list:
        if hasattr(row, "tolist") and not isinstance(row, dict):
            row = row.tolist()
        if isinstance(row, dict):
            values = [0] * len(self.features)
            for key, value in row.items():
                column = key if isinstance(key, int) and not isinstance(key, bool) else self._column.get(key)
                if column is None or not 0 <= column < len(values):
                    raise ValueError(f"a row names the feature {key!r}, which this model does not have")
                values[column] = value
            row = values
        row = list(row)
        if len(row) != len(self.features):
            raise ValueError(f"a row has {len(row)} values, but this model reads {len(self.features)} features")
        for i, value in enumerate(row):
            if isinstance(value, bool):
                row[i] = int(value)
            elif not isinstance(value, numbers.Real) or not math.isfinite(value):
                raise ValueError(f"feature {self.features[i]!r} has the value {value!r}; give finite numbers")
        return row

    def _bits(self, row) -> list[int]:
        bits = []
        for spec in self.inputs:
            value = row[spec["feature"]]
            if spec["threshold"] is None:
                if value not in (0, 1):
                    raise ValueError(f"feature {self.features[spec['feature']]!r} must be 0 or 1 (this model was "
                                     f"trained on 0/1 features), got {value!r}")
                bits.append(int(value))
            else:
                bits.append(int(value > spec["threshold"]))
        return bits

    def _fired(self, bits) -> list[dict]:
        return [c for c in self.clauses
                if all(bits[i] for i in c["positive"]) and not any(bits[i] for i in c["negated"])]

    def _sums(self, fired) -> list[int]:
        sums = [0] * self.n_outputs
        for c in fired:
            sums[c["output"]] += c["polarity"]
        return [max(-self.T, min(self.T, v)) for v in sums]

    def _prediction(self, sums):
        if self.classes is None:
            y_min, y_max = self.document["y_range"]
            return float(sums[0]) / self.T * (y_max - y_min) + y_min
        return self.classes[max(range(len(sums)), key=lambda k: (sums[k], -k))]

    def class_sums(self, rows) -> list[list[int]]:
        """The clipped sums of each row, one per output (class)."""
        return [self._sums(self._fired(self._bits(self._row(r)))) for r in rows]

    def predict(self, rows) -> list:
        """The prediction of each row: a class of ``classes``, or a regressor's number."""
        return [self._prediction(sums) for sums in self.class_sums(rows)]

    def explain(self, row) -> dict:
        """One row's prediction, its sums and the clauses that fired (each with its vote)."""
        fired = self._fired(self._bits(self._row(row)))
        sums = self._sums(fired)
        out = {"prediction": self._prediction(sums)}
        if self.classes is None:
            out["sum"] = sums[0]
        else:
            out["sums"] = dict(zip((_key(c) for c in self.classes), sums))
        out["fired"] = [{**({"class": self.classes[c["output"]]} if self.classes is not None else {}),
                         "clause": c["clause"], "vote": c["polarity"], "rule": c["rule"]} for c in fired]
        return out


def _key(label):
    return label if isinstance(label, (str, int, float, bool)) else str(label)


def _checked(d) -> dict:
    """``d`` if it is a rules document this version reads; ValueError naming the first problem otherwise."""
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise ValueError(f"not a rules file (its \"format\" must be {FORMAT!r})")
    if d.get("version") != VERSION:
        raise ValueError(f"rules file version {d.get('version')!r}; this asynctm reads version {VERSION}")
    if d.get("estimator") not in _ESTIMATORS:
        raise ValueError(f"\"estimator\" must be one of {_ESTIMATORS}, got {d.get('estimator')!r}")
    T = d.get("T")
    if not isinstance(T, int) or isinstance(T, bool) or T < 1:
        raise ValueError(f"\"T\" must be an integer >= 1, got {T!r}")
    features, inputs, clauses = d.get("features"), d.get("inputs"), d.get("clauses")
    if not isinstance(features, list) or not features:
        raise ValueError("\"features\" must be a non-empty list of feature names")
    if not isinstance(inputs, list) or not isinstance(clauses, list):
        raise ValueError("\"inputs\" and \"clauses\" must be lists")
    for i, spec in enumerate(inputs):
        if not isinstance(spec, dict) or not isinstance(spec.get("feature"), int) \
                or not 0 <= spec["feature"] < len(features):
            raise ValueError(f"inputs[{i}] must name a feature column in [0, {len(features)})")
        t = spec.get("threshold")
        if t is not None and (not isinstance(t, (int, float)) or isinstance(t, bool) or not math.isfinite(t)):
            raise ValueError(f"inputs[{i}].threshold must be a finite number or null, got {t!r}")
    if d["estimator"] == "TMClassifier":
        classes = d.get("classes")
        if not isinstance(classes, list) or len(classes) < 2:
            raise ValueError("\"classes\" must list at least 2 classes")
        n_outputs = len(classes)
    else:
        y_range = d.get("y_range")
        if not isinstance(y_range, list) or len(y_range) != 2 \
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in y_range):
            raise ValueError("\"y_range\" must be [y_min, y_max]")
        n_outputs = 1
    for i, c in enumerate(clauses):
        ok = isinstance(c, dict) and isinstance(c.get("output"), int) and 0 <= c["output"] < n_outputs \
            and c.get("polarity") in (1, -1) and isinstance(c.get("positive"), list) \
            and isinstance(c.get("negated"), list) \
            and all(isinstance(k, int) and 0 <= k < len(inputs) for k in [*c["positive"], *c["negated"]])
        if not ok:
            raise ValueError(f"clauses[{i}] must hold an output in [0, {n_outputs}), a polarity of 1 or -1 and lists "
                             f"\"positive\" and \"negated\" of inputs in [0, {len(inputs)})")
    return d
