"""Bike Sharing, BlogFeedback and CoarseWSD-20 apple/java: counts, and fidelity to the authors' inputs.

The authors' derived files are in the mirror's ``paper_repo/``: ``bikeS`` (Bike Sharing before
binarization) and ``apple.csv``/``java.csv`` (the WSD sentences). Their word-sense script built the
bag of words from those sentences; the WSD tests rebuild it here independently, step by step with
NLTK's own tokenizer and ``FreqDist`` (whose ``most_common`` order defines their columns), and
require our matrices to equal it.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest

from asynctm.datasets import (
    bike_sharing,
    blogfeedback,
    load_processed,
    prepare_dataset,
    thermometer,
    wsd_apple,
    wsd_java,
)
from asynctm.datasets.fetch import fetch, read_manifest

NAMES = ("bike_sharing", "blogfeedback", "wsd_apple", "wsd_java")


@pytest.fixture(scope="module")
def built(mirror, tmp_path_factory):
    """Fetch the four datasets from the mirror and prepare both protocols (via the saved files)."""
    root = tmp_path_factory.mktemp("tabular")
    out = {}
    for name in NAMES:
        raw = root / "raw" / name
        fetch(name, raw, mirror)
        for protocol in ("paper", "clean"):
            prepare_dataset(name, raw, protocol, root / "processed" / name / protocol)
            out[name, protocol] = load_processed(root / "processed" / name / protocol)
        out[name, "raw"] = raw
    return out


# --- Bike Sharing ------------------------------------------------------------------------------


def test_bike_counts(built):
    ds = built["bike_sharing", "paper"]
    assert ds.task == "regression"
    assert ds.X_train.shape == (13_904, 1_389) and ds.X_test.shape == (3_475, 1_389)
    assert ds.y_train.dtype == np.float64 and ds.y_train[:3].tolist() == [16.0, 40.0, 32.0]
    assert ds.meta["counts"] == {"train": 13_904, "test": 3_475}
    assert ds.meta["protocol"] == "paper" if "protocol" in ds.meta else ds.protocol == "paper"


def test_bike_table_equals_authors_bikeS(built, mirror):
    X, y, names = bike_sharing.load_table(built["bike_sharing", "raw"], "paper")
    bikeS = np.loadtxt(mirror / "paper_repo" / "bikeS")  # tab-separated, 14 features then cnt
    assert len(names) == 14 and {"casual", "registered"} <= set(names)
    assert np.array_equal(np.column_stack([X, y]), bikeS)


def test_bike_bits_follow_the_thermometer_rule_over_bikeS(built, mirror):
    bikeS = np.loadtxt(mirror / "paper_repo" / "bikeS")
    feats = bikeS[:, :-1]
    expected = np.concatenate(
        [(feats[:, [j]] <= np.unique(feats[:, j])[None, :]) for j in range(feats.shape[1])], axis=1
    ).astype(np.uint8)
    ds = built["bike_sharing", "paper"]
    assert np.array_equal(np.vstack([ds.X_train, ds.X_test]), expected)
    assert np.array_equal(np.concatenate([ds.y_train, ds.y_test]), bikeS[:, -1])


def test_bike_clean_drops_the_leaking_counts(built):
    ds = built["bike_sharing", "clean"]
    assert ds.X_train.shape == (13_904, 291)
    assert not any(f.startswith(("casual<=", "registered<=")) for f in ds.feature_names)
    assert ds.protocol == "clean"


# --- BlogFeedback ------------------------------------------------------------------------------


def test_blog_counts_and_target(built):
    ds = built["blogfeedback", "paper"]
    assert ds.X_train.shape[0] == 16_000 and ds.X_test.shape[0] == 4_000
    X, y = blogfeedback.load_table(built["blogfeedback", "raw"])
    assert X.shape == (20_000, 280)
    assert np.array_equal(ds.y_train, y[:16_000]) and np.array_equal(ds.y_test, y[16_000:])


def test_blog_thresholds_at_most_25_and_fitted_on_train(built):
    ds = built["blogfeedback", "paper"]
    X, _ = blogfeedback.load_table(built["blogfeedback", "raw"])
    per_feature = {}
    for name in ds.feature_names:
        per_feature.setdefault(name.split("<=")[0], []).append(name)
    assert max(len(v) for v in per_feature.values()) <= 25
    refit = thermometer.quantile_thresholds(X[:16_000], 25)
    _, names = thermometer.encode(X[:1], refit, [f"x{j + 1}" for j in range(280)])
    assert names == ds.feature_names
    # Every bit is a thermometer step: within a feature, x <= u for increasing u never goes 1 -> 0.
    for cols in per_feature.values():
        idx = [ds.feature_names.index(c) for c in cols]
        assert (np.diff(ds.X_train[:, idx].astype(int), axis=1) >= 0).all()


# --- CoarseWSD-20 apple / java -----------------------------------------------------------------


def authors_rows(mirror, word):
    with open(mirror / "paper_repo" / f"{word}.csv", encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["loc", "text", "label"]
    return [tuple(r) for r in rows[1:]]


def authors_bag_of_words(texts):
    """The authors' steps, rebuilt from their description with NLTK's own pieces."""
    from nltk import FreqDist
    from nltk.stem import PorterStemmer
    from nltk.tokenize import RegexpTokenizer

    from asynctm.datasets.stopwords import ENGLISH_STOP_WORDS

    tok, ps = RegexpTokenizer(r"\w+"), PorterStemmer()
    docs, all_stems = [], []
    for t in texts:
        t = t.lower().replace("\n", "")
        for a, b in (("n't", "not"), ("'ve", "have"), ("'ll", "will"), ("'re", "are"), ("'m", "am"),
                     ("/", " / "), ("-", " "), ("!", " "), ("?", " "), ("+", " "), ("*", " ")):
            t = t.replace(a, b)
        t = " ".join(t.split()).strip().strip(".").strip()
        words = [w for w in tok.tokenize(t) if not w.isdigit() and w not in ENGLISH_STOP_WORDS]
        docs.append([ps.stem(w) for w in words])
        all_stems += docs[-1]
    vocab = [w for w, _ in FreqDist(all_stems).most_common(3000)]
    col = {v: j for j, v in enumerate(vocab)}
    X = np.zeros((len(docs), len(vocab)), dtype=np.uint8)
    for i, d in enumerate(docs):
        for w in d:
            if w in col:
                X[i, col[w]] = 1
    return vocab, X


@pytest.mark.parametrize("name, word, n_train, n_test", [("wsd_apple", "apple", 1_784, 1_032),
                                                         ("wsd_java", "java", 3_726, 1_929)])
def test_wsd_counts_and_rows_equal_authors_csv(built, mirror, name, word, n_train, n_test):
    ds = built[name, "paper"]
    assert ds.X_train.shape == (n_train, 3_000) and ds.X_test.shape == (n_test, 3_000)
    assert len(ds.class_names) == 2
    mod = {"wsd_apple": wsd_apple, "wsd_java": wsd_java}[name]
    rows = mod.load_rows(built[name, "raw"])
    assert rows == authors_rows(mirror, word)
    assert np.array_equal(np.concatenate([ds.y_train, ds.y_test]), [int(r[2]) for r in rows])


@pytest.mark.parametrize("name, word", [("wsd_apple", "apple"), ("wsd_java", "java")])
def test_wsd_features_equal_authors_bag_of_words(built, mirror, name, word):
    vocab, X = authors_bag_of_words([r[1] for r in authors_rows(mirror, word)])
    ds = built[name, "paper"]
    assert ds.feature_names == vocab  # same stems, same column order (ties: first occurrence)
    assert np.array_equal(np.vstack([ds.X_train, ds.X_test]), X)


def test_wsd_clean_vocabulary_sees_no_test_sentence(built):
    paper, clean = built["wsd_apple", "paper"], built["wsd_apple", "clean"]
    assert clean.X_train.shape == paper.X_train.shape and clean.feature_names != paper.feature_names
    assert (clean.X_train.sum(axis=0) > 0).all()  # every clean feature occurs in training text


def test_meta_records_protocol_and_raw_digest(built):
    for name in NAMES:
        manifest = read_manifest(built[name, "raw"])
        for protocol in ("paper", "clean"):
            ds = built[name, protocol]
            assert ds.protocol == protocol
            assert ds.meta["raw_digest"] == manifest["raw_digest"]
            assert ds.meta["raw_members"] == manifest["members"]
