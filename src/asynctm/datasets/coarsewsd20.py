"""CoarseWSD-20 (balanced), one binary word-sense task per ambiguous word (the paper: apple, java).

The shared preparation of :mod:`asynctm.datasets.wsd_apple` and :mod:`asynctm.datasets.wsd_java`.
Rows are the word's ``train`` then ``test`` examples in file order: ``<loc>\\t<sentence>`` in
``*.data.txt`` (``loc`` is the target word's token index) with the sense index in ``*.gold.txt``;
the authors' ``apple.csv``/``java.csv`` are exactly these rows as ``loc,text,label``.

Text to stems (protocol ``paper``, the authors' steps in their order):
lowercase; ``n't``->``not``, ``'ve``->``have``, ``'ll``->``will``, ``'re``->``are``, ``'m``->``am``
(plain substring replacement, so ``do n't`` becomes ``do not``); ``/ - ! ? + *`` become spaces;
tokens are ``\\w+`` runs; tokens with ``str.isdigit()`` and NLTK English stop words (the 179-word
list, :mod:`asynctm.datasets.stopwords`) are dropped; the rest are Porter-stemmed
(``nltk.stem.PorterStemmer``, NLTK extensions mode).

Vocabulary: the 3,000 most frequent stems by total count over train + test, ties broken by first
occurrence in file order; column ``k`` is the ``k``-th stem of that ranking. This is the order
``nltk.FreqDist(stems).most_common(3000)`` gives (a ``Counter`` keeps insertion order and sorts
stably), which is how the authors built their columns. A row's bit is 1 iff the stem occurs in it.

Protocol ``clean`` counts the stems of the training rows only for the vocabulary (no test data
reaches the features); all else is equal.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .base import ProcessedDataset, RawFile, Source

TASK = "classification"  # what the processed dataset is for (the config's experiments must agree)
PROTOCOLS = ("paper", "clean")
N_FEATURES = 3000
MIRROR_FOLDER = "coarsewsd20/CoarseWSD-20_balanced"
# danlou/bert-disambiguation pinned to a commit that holds the data, so the URL cannot drift.
URL_BASE = ("https://raw.githubusercontent.com/danlou/bert-disambiguation/"
            "e1b829108b03c374a52e8b9ddf070925e41f2382/data/CoarseWSD-20_balanced")
FILES = ("train.data.txt", "train.gold.txt", "test.data.txt", "test.gold.txt", "classes_map.txt")

_CONTRACTIONS = (("n't", "not"), ("'ve", "have"), ("'ll", "will"), ("'re", "are"), ("'m", "am"))
_SPACED = str.maketrans({c: " " for c in "/-!?+*"})
_TOKEN = re.compile(r"\w+")


@dataclass(frozen=True)
class Word:
    """One CoarseWSD-20 word as a dataset: its registry name, counts and member checksums."""

    name: str
    word: str
    n_train: int
    n_test: int
    sha256: dict  # file name (one of FILES) -> sha256

    @property
    def sources(self) -> tuple:
        return tuple(Source(url=f"{URL_BASE}/{self.word}/{f}", mirror_path=f"{MIRROR_FOLDER}/{self.word}/{f}",
                            kind="file", members=(RawFile(f, self.sha256[f]),),
                            max_unpacked=16 << 20)  # each file is under 1 MB
                     for f in FILES)


def _lines(path: Path) -> list[str]:
    # The files have no final newline; split("\n") keeps every row, including an empty sentence.
    text = path.read_text(encoding="utf-8")
    return text[:-1].split("\n") if text.endswith("\n") else text.split("\n")


def load_rows(raw_dir, word: Word) -> list[tuple[str, str, str]]:
    """``(loc, text, label)`` for train then test rows, as strings, exactly as in the raw files."""
    rows = []
    for part, n in (("train", word.n_train), ("test", word.n_test)):
        data = _lines(Path(raw_dir) / f"{part}.data.txt")
        gold = _lines(Path(raw_dir) / f"{part}.gold.txt")
        if len(data) != n or len(gold) != n:
            raise ValueError(f"{word.name}: {part} has {len(data)} sentences and {len(gold)} labels, expected {n}")
        for line, label in zip(data, gold):
            loc, text = line.split("\t", 1)
            rows.append((loc, text, label))
    return rows


def stems(text: str, stop_words, stemmer) -> list[str]:
    """The authors' text-to-stems steps (see the module docstring), in order."""
    t = text.lower().replace("\n", "")
    for a, b in _CONTRACTIONS:
        t = t.replace(a, b)
    tokens = _TOKEN.findall(t.translate(_SPACED))
    return [stemmer.stem(w) for w in tokens if not w.isdigit() and w not in stop_words]


class _MemoStemmer:
    """Porter stemming is pure per token; remembering results makes preparation ~5x faster."""

    def __init__(self, stemmer):
        self._stemmer, self._memo = stemmer, {}

    def stem(self, w: str) -> str:
        s = self._memo.get(w)
        if s is None:
            s = self._memo[w] = self._stemmer.stem(w)
        return s


def most_frequent(docs: list[list[str]], k: int) -> list[str]:
    """The ``k`` most frequent stems over ``docs``: count descending, then first occurrence."""
    counts: dict[str, int] = {}
    for doc in docs:
        for s in doc:
            counts[s] = counts.get(s, 0) + 1
    first = {s: i for i, s in enumerate(counts)}  # dicts keep insertion (first occurrence) order
    return sorted(counts, key=lambda s: (-counts[s], first[s]))[:k]


def bag_of_words(docs: list[list[str]], vocabulary: list[str]) -> np.ndarray:
    col = {s: j for j, s in enumerate(vocabulary)}
    X = np.zeros((len(docs), len(vocabulary)), dtype=np.uint8)
    for i, doc in enumerate(docs):
        X[i, [col[s] for s in doc if s in col]] = 1
    return X


def featurise(texts: list[str], n_train: int, protocol: str = "paper") -> tuple[np.ndarray, list[str]]:
    """Texts (train first, then test) -> the binary bag of the ``N_FEATURES`` most frequent stems, counted
    over train + test (protocol ``paper``) or the first ``n_train`` texts only (``clean``)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; expected one of {PROTOCOLS}")
    from nltk.stem import PorterStemmer

    from .stopwords import ENGLISH_STOP_WORDS

    stemmer = _MemoStemmer(PorterStemmer())
    docs = [stems(text, ENGLISH_STOP_WORDS, stemmer) for text in texts]
    counted = docs if protocol == "paper" else docs[:n_train]
    vocabulary = most_frequent(counted, N_FEATURES)
    return bag_of_words(docs, vocabulary), vocabulary


def prepare(word: Word, raw_dir, protocol: str = "paper") -> ProcessedDataset:
    if protocol not in PROTOCOLS:
        raise ValueError(f"{word.name}: unknown protocol {protocol!r}")
    import nltk

    rows = load_rows(raw_dir, word)
    X, vocabulary = featurise([text for _, text, _ in rows], word.n_train, protocol)
    y = np.array([int(label) for _, _, label in rows], dtype=np.int64)
    classes = json.loads((Path(raw_dir) / "classes_map.txt").read_text(encoding="utf-8"))
    n = word.n_train
    return ProcessedDataset(
        name=word.name, protocol=protocol, task=TASK, X_train=X[:n], y_train=y[:n], X_test=X[n:], y_test=y[n:],
        feature_names=vocabulary, class_names=[classes[str(i)] for i in range(len(classes))],
        meta={"word": word.word,
              "vocabulary": f"{N_FEATURES} most frequent Porter stems over "
              + ("train + test" if protocol == "paper" else "train only")
              + ", count descending then first occurrence",
              "split": "the balanced CoarseWSD-20 train / test files, file order",
              "nltk_version": nltk.__version__})  # the Porter stemmer's output can change across NLTK versions
