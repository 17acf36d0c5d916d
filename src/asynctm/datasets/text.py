"""Shared text helpers for the text datasets: the authors' tokenisers and binary n-gram encoding.

Each tokeniser reproduces one of the paper authors' scripts (cair/ICML-Massively-Parallel-and-
Asynchronous-Tsetlin-Machine-Architecture, ``experiments/``) step by step, quirks included, because
the features the paper's Tsetlin Machines saw depend on them. The quirks are named where they occur.
"""

from __future__ import annotations

import itertools
import string
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .base import ProcessedDataset
from .stopwords import ENGLISH_STOP_WORDS

# --- reading files as the authors' Python did ----------------------------------------------------


def decode_utf8_ignore(data: bytes) -> str:
    """UTF-8 with undecodable bytes dropped: ``open(path, encoding="utf8", errors="ignore")``.

    This is how the novelty scripts read BBC Sport and 20 Newsgroups; it is why the latin-1 pound
    sign (byte 0xA3) in BBC Sport ``football/105.txt`` simply vanishes ("£15.8m" -> "15.8m").
    """
    return data.decode("utf-8", errors="ignore")


def text_lines(text: str) -> list[str]:
    """``readlines()`` of a text-mode file: universal newlines (\\r\\n and \\r become \\n), ends kept.

    ``str.splitlines`` would also split on form feeds and other separators, which Python's file
    reading does not, so the split is done by hand.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def drop_header(lines: Sequence[str]) -> list[str]:
    """The lines after the first empty line (all lines if there is none).

    BBC Sport documents start with a title line, 20 Newsgroups posts with From:/Subject:; both end
    with an empty line. A line holding only spaces does not count as empty (as in the authors' code).
    """
    for i, line in enumerate(lines):
        if line == "\n":
            return list(lines[i + 1 :])
    return list(lines)


# --- the novelty-detection tokeniser (BBC Sport, 20 Newsgroups) -----------------------------------

_NO_TABS = str.maketrans("", "", "\t")
# Every ASCII punctuation mark except the apostrophe, which stop words such as "don't" contain.
_NO_PUNCT_BUT_APOSTROPHE = str.maketrans("", "", string.punctuation.replace("'", ""))


def novelty_line_tokens(line: str, stop_words: frozenset = ENGLISH_STOP_WORDS) -> list[str]:
    """Tokens of one line, as ``experiments/helper.py`` of the authors made them.

    In order: drop the line's last character (meant for the newline: on a final line without one
    it removes a real character), strip surrounding whitespace, split on single spaces, delete tabs
    and all punctuation but ``'``, drop empty tokens, "unquote" (a token ending in ``'`` loses its
    first and last character, even when the first is a letter: ``players'`` -> ``layers``; one
    starting with ``'`` loses that), drop digit-only tokens (``str.isdigit``) and 1-character
    tokens, lowercase, drop tokens of at most 2 characters, drop stop words.
    """
    out = []
    for word in line[:-1].strip().split(" "):
        word = word.translate(_NO_TABS).translate(_NO_PUNCT_BUT_APOSTROPHE)
        if not word:
            continue
        if word[-1] == "'":
            word = word[1:-1]
        elif word[0] == "'":
            word = word[1:]
        if not word or word.isdigit() or len(word) == 1:
            continue
        word = word.lower()
        if len(word) > 2 and word not in stop_words:
            out.append(word)
    return out


def novelty_document_tokens(data: bytes) -> list[str]:
    """All tokens of one raw document (bytes): decode, drop the header, tokenise every line."""
    lines = drop_header(text_lines(decode_utf8_ignore(data)))
    return [tok for line in lines for tok in novelty_line_tokens(line)]


# --- folder corpora -------------------------------------------------------------------------------


def list_class_documents(root: str | Path, classes: Iterable[str]) -> tuple[list[str], list[str]]:
    """``(relative paths, class names)`` of every file in ``root/<class>/``, in sorted order.

    The authors listed folders and files with ``os.listdir``, whose order depends on the file
    system; sorting (classes as given, file names lexicographically) makes the split reproducible.
    """
    root = Path(root)
    paths, labels = [], []
    for cls in classes:
        folder = root / cls
        if not folder.is_dir():
            raise FileNotFoundError(f"{folder}: class folder missing")
        names = sorted(p.name for p in folder.iterdir() if p.is_file())
        paths += [f"{cls}/{n}" for n in names]
        labels += [cls] * len(names)
    return paths, labels


# --- vocabularies and binary encodings ------------------------------------------------------------


def binary_bag_of_words(docs: Sequence[Sequence], vocabulary: dict) -> sp.csr_matrix:
    """A 0/1 CSR matrix: row i has a 1 in column ``vocabulary[t]`` for each known term t of doc i.

    Terms outside the vocabulary are ignored (a test document's unseen words carry no feature).
    """
    indptr = [0]
    indices: list[int] = []
    for doc in docs:
        cols = sorted({vocabulary[t] for t in doc if t in vocabulary})
        indices += cols
        indptr.append(len(indices))
    data = np.ones(len(indices), dtype=np.uint8)
    return sp.csr_matrix((data, np.asarray(indices, dtype=np.int32), np.asarray(indptr, dtype=np.int64)),
                         shape=(len(docs), len(vocabulary)))


def unigrams_and_bigrams(words: Sequence[str]) -> list:
    """The terms of one sentence: its words, then its adjacent word pairs as tuples."""
    return list(words) + list(itertools.pairwise(words))


def term_name(term) -> str:
    """A feature name: the word itself, or the two words of a bigram joined by one space."""
    return term if isinstance(term, str) else " ".join(term)


def sorted_vocabulary(terms: Iterable) -> dict:
    """``{term: column}`` over the distinct terms: words first, then bigrams, each sorted.

    The authors numbered terms in Python ``set`` order, which changes with every interpreter run
    (string hashing is randomised); sorted order is a stable stand-in with the same feature set.
    """
    distinct = set(terms)
    words = sorted(t for t in distinct if isinstance(t, str))
    pairs = sorted(t for t in distinct if not isinstance(t, str))
    return {t: i for i, t in enumerate(words + pairs)}


def sklearn_split(n: int, test_size: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Row indices of ``sklearn.model_selection.train_test_split(range(n), test_size=...,
    random_state=seed, shuffle=True)``: train first, test second, each in the shuffled order."""
    from sklearn.model_selection import train_test_split

    train, test = train_test_split(np.arange(n), test_size=test_size, random_state=seed, shuffle=True)
    return np.asarray(train, dtype=np.int64), np.asarray(test, dtype=np.int64)


# --- the novelty-detection datasets ---------------------------------------------------------------


def novelty_dataset(name: str, protocol: str, root: str | Path, known: Sequence[str], novel: Sequence[str],
                    seed: int = 42, raw_prefix: str = "") -> ProcessedDataset:
    """Known-class train/test and novel-class documents as binary bags of words (noveltyscore.py).

    The known documents (classes numbered in sorted order, as sklearn's ``LabelEncoder`` does) are
    split 50/50 by ``train_test_split(test_size=0.5, random_state=seed, shuffle=True)``; the
    vocabulary is every token of the training documents; test and novel documents are encoded
    with it. Features only: negated literals are a model option, not part of the data.
    """
    root = Path(root)
    classes = sorted(known)
    paths, labels = list_class_documents(root, classes)
    novel_paths, novel_labels = list_class_documents(root, sorted(novel))
    y = np.array([classes.index(c) for c in labels], dtype=np.int64)
    train, test = sklearn_split(len(paths), test_size=0.5, seed=seed)

    def tokens(rel: str) -> list[str]:
        return novelty_document_tokens((root / rel).read_bytes())

    docs = [tokens(p) for p in paths]
    novel_docs = [tokens(p) for p in novel_paths]
    vocabulary = sorted_vocabulary(t for i in train for t in docs[i])

    def encode(rows):
        return binary_bag_of_words([docs[i] for i in rows], vocabulary)

    counts = {c: (labels + novel_labels).count(c) for c in [*classes, *sorted(novel)]}
    return ProcessedDataset(
        name=name, protocol=protocol, task="novelty", X_train=encode(train), y_train=y[train], X_test=encode(test),
        y_test=y[test], X_novel=binary_bag_of_words(novel_docs, vocabulary), feature_names=list(vocabulary),
        class_names=classes,
        meta={"novel_class_names": sorted(novel), "documents_per_class": counts,
              "documents": {"train": [raw_prefix + paths[i] for i in train],
                            "test": [raw_prefix + paths[i] for i in test],
                            "novel": [raw_prefix + p for p in novel_paths]},
              "preparation": ("authors' noveltyscore.py/helper.py: utf-8 decoding with undecodable bytes dropped; "
                              "lines up to the first empty line dropped; per line: last character dropped, "
                              "split on spaces, tabs and punctuation except ' deleted, quote stripping, "
                              "digit-only and <=2-character tokens dropped, lowercased, NLTK English stop words "
                              "dropped; documents in sorted order, sklearn train_test_split(test_size=0.5, "
                              f"random_state={seed}, shuffle=True); vocabulary = training tokens, sorted; "
                              "binary bag of words")})
