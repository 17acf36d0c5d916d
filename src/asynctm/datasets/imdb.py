"""IMDb movie reviews (Maas et al., 2011): sentiment, 25,000 training and 25,000 test reviews.

The authors loaded Keras' ``imdb.npz`` with ``num_words=5000, index_from=2`` and built features from
the id sequences (``experiments/classification_imdbsentiment.py``). That file is reproduced here
from its sources, the labelled aclImdb reviews and the Keras word index:

- Keras' word index is the vocabulary of the 25,000 *training* reviews, ranked by count, under
  Keras' ``text_to_word_sequence`` of the time: ASCII-only lowercasing (the builder ran on Python 2
  byte strings, so "Ángela" keeps its capital), the characters ``!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~``
  plus tab and newline replaced by spaces (the apostrophe is kept; ``<br />`` leaves "br"), split on
  single spaces. Under this tokeniser our training vocabulary is exactly the index's 88,584 words
  and their counts fall monotonically with the index rank.
- A review's sequence is the ranks of its words; words missing from the index (only in test
  reviews) are skipped, as ``Tokenizer.texts_to_sequences`` skipped them.
- ``imdb.npz`` stores each split as the positive reviews, then the negative ones, each in sorted
  file-name order. ``load_data`` then shuffles train and test with one ``RandomState(113)``,
  prepends the start id 1, adds ``index_from`` and replaces ids >= ``num_words`` by the oov id 2.

Checked against published facts about ``imdb.npz``: the first shuffled training review is
``train/pos/576_10.txt`` with the 218 ids printed in TensorFlow's IMDb tutorial, the second has 189
ids, the first ten labels are 1 0 0 1 0 0 1 0 1 0, the first test review is ``test/neg/7975_1.txt``,
the mean (std) length over all 50,000 is 234.76 (172.91), the longest training/test reviews have
2,494/2,315 ids. When the real ``imdb.npz`` is in the raw folder (an optional source, checked
against Keras' sha256) its sequences are used instead; the meta records which.

Features (protocol ``paper``): with ``index_from=2`` the words of rank <= 4,997 keep an id below
5,000; terms are the words, ``<START>`` and ``<UNK>``; every unigram and bigram of the training
sequences counted at least 10 times (occurrences) is a candidate, numbered in order of first
occurrence as the authors' dict numbered them; the top 5,000 by ``SelectKBest(chi2)`` fitted on the
training set are kept, in that order.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .base import ProcessedDataset, RawFile, RawFolder, Source, sha256_file

NAME = "imdb"
TASK = "classification"  # what the processed dataset is for (the config's experiments must agree)
PROTOCOLS = ("paper",)

NUM_WORDS = 5000  # Keras load_data(num_words=...)
INDEX_FROM = 2  # Keras load_data(index_from=...)
START_ID, OOV_ID = 1, 2  # Keras' start_char and oov_char
SHUFFLE_SEED = 113  # Keras load_data's default seed
MIN_COUNT = 10  # candidate n-grams: at least this many occurrences in the training set
N_FEATURES = 5000  # SelectKBest(chi2, k=...)
START, UNK = "<START>", "<UNK>"

REVIEW_FOLDERS = {
    ("train", "pos"): "29b5aed9a11afd2d3d2698706100dd091a7bbef8f5d73136f26b91732c8ecdb9",
    ("train", "neg"): "51a9e7127594a89ad304bffc65c86de0e5564bc33a73cfb5ba866a19cd2f03a5",
    ("test", "pos"): "c48aa99534adb7a3f947603c1163ff76e8a90506149e5e514261204edab23379",
    ("test", "neg"): "54fc32f5b1f75b47a2dfd69f94c576c2aa9f99f5a83126cd775a2e15ba49611e",
}
WORD_INDEX = RawFile("imdb_word_index.json", "027313fe9a320280f3bf0fac5baf58c4a683cf39a7ed9c3d3d3912bde4284cf6")
# The authors' actual input, optional: used when present (Keras' get_file hash for imdb.npz).
KERAS_NPZ = RawFile("imdb.npz", "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f")

SOURCES = (
    Source(
        url="https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz",
        # The mirror repacks the labelled reviews only (no unsup/, no .feat files) as .tar.xz.
        mirror_path="imdb/aclImdb_labelled.tar.xz",
        kind="tar",
        members=tuple(RawFolder(f"aclImdb/{s}/{c}", d) for (s, c), d in REVIEW_FOLDERS.items()),
        # The mirror's tar of the labelled reviews is 104 MB; the official one adds 50,000 unlabelled
        # reviews and the bag-of-words files (not measured here: no network; estimated below 0.4 GB).
        max_unpacked=640 << 20,
    ),
    Source(
        url="https://storage.googleapis.com/tensorflow/tf-keras-datasets/imdb_word_index.json",
        mirror_path="imdb/imdb_word_index.json.xz",
        kind="file",
        mirror_kind="xz",
        members=(WORD_INDEX,),
        max_unpacked=16 << 20,  # 1.6 MB
    ),
    Source(
        url="https://storage.googleapis.com/tensorflow/tf-keras-datasets/imdb.npz",
        mirror_path="imdb/imdb.npz",
        kind="file",
        members=(KERAS_NPZ,),
        optional=True,
        max_unpacked=64 << 20,  # Keras' imdb.npz is 17 MB
    ),
)

# --- Keras' tokenisation --------------------------------------------------------------------------

KERAS_FILTERS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'
_KERAS_TABLE = str.maketrans(KERAS_FILTERS + "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                             " " * len(KERAS_FILTERS) + "abcdefghijklmnopqrstuvwxyz")


def keras_words(text: str) -> list[str]:
    """Keras ``text_to_word_sequence`` as it ran on Python 2 byte strings (ASCII-only lowercase)."""
    return [w for w in text.translate(_KERAS_TABLE).split(" ") if w]


def load_word_index(path: str | Path) -> dict:
    """Keras' ``{word: rank}`` (rank 1 = most frequent training word)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


# --- the raw sequences of imdb.npz ----------------------------------------------------------------


def npz_order_files(raw_dir: str | Path, split: str) -> tuple[list[Path], np.ndarray]:
    """Review files of ``split`` in imdb.npz order (pos then neg, sorted names) and their labels."""
    files, labels = [], []
    for label, cls in ((1, "pos"), (0, "neg")):
        folder = Path(raw_dir) / "aclImdb" / split / cls
        names = sorted(os.listdir(folder))
        files += [folder / n for n in names]
        labels += [label] * len(names)
    return files, np.array(labels, dtype=np.int64)


def sequences_from_reviews(raw_dir: str | Path, word_index: dict) -> dict:
    """``{x_train, y_train, x_test, y_test}`` as stored in imdb.npz (lists of rank arrays)."""
    out = {}
    for split in ("train", "test"):
        files, labels = npz_order_files(raw_dir, split)
        seqs = []
        for f in files:
            words = keras_words(f.read_bytes().decode("utf-8"))
            seqs.append(np.array([word_index[w] for w in words if w in word_index], dtype=np.int32))
        out[f"x_{split}"], out[f"y_{split}"] = seqs, labels
    return out


def sequences_from_npz(path: str | Path, sha256: str | None = None) -> dict:
    """The same from a Keras ``imdb.npz``; its hash is checked first because loading it unpickles."""
    expected = KERAS_NPZ.sha256 if sha256 is None else sha256
    actual = sha256_file(path)
    if actual != expected:
        raise ValueError(f"{path}: sha256 {actual} is not Keras' imdb.npz ({expected}); refusing to unpickle it")
    with np.load(path, allow_pickle=True) as z:
        return {"x_train": [np.asarray(s, dtype=np.int32) for s in z["x_train"]],
                "y_train": np.asarray(z["y_train"], dtype=np.int64),
                "x_test": [np.asarray(s, dtype=np.int32) for s in z["x_test"]],
                "y_test": np.asarray(z["y_test"], dtype=np.int64)}


def keras_load_data(raw: dict, num_words=NUM_WORDS, index_from=INDEX_FROM, seed=SHUFFLE_SEED):
    """``keras.datasets.imdb.load_data``'s transformation of the stored sequences.

    Returns ``(x_train, y_train, x_test, y_test)`` with ids: 1 = start, 2 = oov, word of rank r =
    r + index_from, and every id >= num_words replaced by the oov id.
    """
    rng = np.random.RandomState(seed)
    out = []
    for split in ("train", "test"):
        order = np.arange(len(raw[f"x_{split}"]))
        rng.shuffle(order)  # one generator for both splits, train first, as in Keras
        seqs = []
        for i in order:
            s = np.concatenate(([START_ID], raw[f"x_{split}"][i] + index_from)).astype(np.int32)
            s[s >= num_words] = OOV_ID
            seqs.append(s)
        out += [seqs, np.asarray(raw[f"y_{split}"])[order]]
    return tuple(out)


# --- n-gram features ------------------------------------------------------------------------------


def _flatten(seqs) -> tuple[np.ndarray, np.ndarray]:
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    flat = np.concatenate(seqs).astype(np.int64) if len(seqs) else np.zeros(0, np.int64)
    return flat, lengths


def ngram_keys(seqs, num_words: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every unigram and bigram occurrence as ``(key, document, stream position)``.

    Unigram key = id (< num_words); bigram key = num_words + a * num_words + b. The stream
    position orders occurrences as the authors' loop met them: document by document, a document's
    unigrams before its bigrams, so the first occurrence of a key fixes its feature number.
    """
    flat, lengths = _flatten(seqs)
    doc = np.repeat(np.arange(len(lengths)), lengths)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    pos_in_doc = np.arange(len(flat)) - np.repeat(starts, lengths)
    # stream offset of each document: its unigrams and bigrams follow those of earlier documents
    per_doc = lengths + np.maximum(lengths - 1, 0)
    doc_offset = np.concatenate(([0], np.cumsum(per_doc)[:-1]))
    uni_pos = doc_offset[doc] + pos_in_doc
    has_next = pos_in_doc < (lengths[doc] - 1)
    first = np.flatnonzero(has_next)
    bi_key = num_words + flat[first] * num_words + flat[first + 1]
    bi_pos = doc_offset[doc[first]] + lengths[doc[first]] + pos_in_doc[first]
    return np.concatenate((flat, bi_key)), np.concatenate((doc, doc[first])), np.concatenate((uni_pos, bi_pos))


def candidate_ngrams(train_seqs, num_words: int, min_count: int) -> np.ndarray:
    """Keys counted at least ``min_count`` times in training, in first-occurrence order."""
    keys, _, pos = ngram_keys(train_seqs, num_words)
    keys = keys[np.argsort(pos, kind="stable")]
    uniq, first, counts = np.unique(keys, return_index=True, return_counts=True)
    keep = counts >= min_count
    return uniq[keep][np.argsort(first[keep], kind="stable")]


def encode(seqs, columns: np.ndarray, num_words: int) -> sp.csr_matrix:
    """0/1 CSR: row i has a 1 in column j when document i contains the n-gram ``columns[j]``."""
    keys, doc, _ = ngram_keys(seqs, num_words)
    # A direct lookup table over all possible keys (num_words**2 + num_words entries, 100 MB for
    # 5,000 words) is several times faster than a search.
    lookup = np.full(num_words + num_words * num_words, -1, dtype=np.int32)
    lookup[columns] = np.arange(len(columns), dtype=np.int32)
    col = lookup[keys]
    hit = col >= 0
    counts = np.ones(int(hit.sum()), dtype=np.int32)  # int32: repeated n-grams are summed first
    X = sp.coo_matrix((counts, (doc[hit], col[hit])), shape=(len(seqs), len(columns))).tocsr()
    X.sum_duplicates()
    return sp.csr_matrix((np.ones(X.nnz, dtype=np.uint8), X.indices, X.indptr), shape=X.shape)


def key_name(key: int, id_to_word: dict, num_words: int) -> str:
    """The authors' phrase for a key: a word, or two words joined by a space."""
    if key < num_words:
        return id_to_word[key]
    a, b = divmod(key - num_words, num_words)
    return f"{id_to_word[a]} {id_to_word[b]}"


def build_features(x_train, y_train, x_test, id_to_word: dict, num_words=NUM_WORDS, min_count=MIN_COUNT,
                   k=N_FEATURES):
    """Candidates by count, then the chi-squared top ``k`` fitted on training; returns X's and names."""
    from sklearn.feature_selection import SelectKBest, chi2

    columns = candidate_ngrams(x_train, num_words, min_count)
    X_train = encode(x_train, columns, num_words)
    X_test = encode(x_test, columns, num_words)
    # SelectKBest ranks with a stable sort, so ties at the cut keep the later-numbered n-grams,
    # exactly as with the authors' dense matrix in the same column order.
    selector = SelectKBest(chi2, k=min(k, len(columns))).fit(X_train, y_train)
    chosen = selector.get_support(indices=True)
    scores = selector.scores_
    threshold = scores[chosen].min() if len(chosen) else float("nan")
    info = {"n_candidates": len(columns), "chi2_threshold": float(threshold),
            "n_tied_at_threshold": int(np.sum(scores == threshold))}
    names = [key_name(int(c), id_to_word, num_words) for c in columns[chosen]]
    return X_train[:, chosen].tocsr(), X_test[:, chosen].tocsr(), names, info


def prepare(raw_dir: str | Path, protocol: str = "paper", *, num_words: int = NUM_WORDS, min_count: int = MIN_COUNT,
            n_features: int = N_FEATURES) -> ProcessedDataset:
    """Binary n-gram features of the Keras IMDb sequences (keywords only for small tests)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"{NAME}: unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    raw_dir = Path(raw_dir)
    word_index = load_word_index(raw_dir / WORD_INDEX.path)
    npz = raw_dir / KERAS_NPZ.path
    if npz.exists():
        raw, origin = sequences_from_npz(npz), "imdb.npz (Keras)"
    else:
        raw, origin = sequences_from_reviews(raw_dir, word_index), "aclImdb reviews + imdb_word_index.json"
    x_train, y_train, x_test, y_test = keras_load_data(raw, num_words=num_words)
    id_to_word = {rank + INDEX_FROM: w for w, rank in word_index.items() if rank + INDEX_FROM < num_words}
    id_to_word.update({0: "<PAD>", START_ID: START, OOV_ID: UNK})
    X_train, X_test, names, info = build_features(x_train, y_train, x_test, id_to_word, num_words=num_words,
                                                  min_count=min_count, k=n_features)
    return ProcessedDataset(
        name=NAME, protocol=protocol, task=TASK, X_train=X_train, y_train=np.asarray(y_train, dtype=np.int64),
        X_test=X_test, y_test=np.asarray(y_test, dtype=np.int64), feature_names=names,
        class_names=["negative", "positive"],
        meta={"sequences_from": origin,
              "keras_load_data": {"num_words": num_words, "index_from": INDEX_FROM, "seed": SHUFFLE_SEED},
              "min_count": min_count, "selection": f"SelectKBest(chi2, k={n_features}) fitted on training", **info,
              "preparation": ("Keras imdb.npz sequences (rebuilt from aclImdb + the word index unless imdb.npz is "
                              "present), load_data(num_words, index_from) shuffle and oov mapping; unigrams and "
                              "bigrams of <START>/<UNK>/word terms with >= min_count training occurrences, in "
                              "first-occurrence order; chi-squared top k; rows in Keras' shuffled order")})
