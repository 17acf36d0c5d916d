"""SemEval-2010 Task 8 (Hendrickx et al., 2010) as a binary task: is the relation Cause-Effect?

The release holds ``TRAIN_FILE.TXT`` (8,000 sentences) and ``TEST_FILE_FULL.TXT`` (2,717), each
record a numbered, quoted sentence with ``<e1>``/``<e2>`` entity tags, its relation, a comment and an
empty line. The authors' input (``data/cause_effect.txt`` of their repository) is the 8,000 training
sentences with the quotes and entity tags removed, labelled 1 for Cause-Effect in either direction
(1,003) and 0 otherwise.

Protocol ``paper`` (``experiments/classification_causalrelation.py``): commas removed, lowercased,
all ASCII punctuation deleted, split on single spaces (so doubled spaces and punctuation-only
tokens give the empty word ``""``, kept as a feature like any other); features = every word and
every adjacent word pair of all 8,000 sentences (102,176); a random 75/25 split (the authors'
``train_test_split`` had no seed; we fix ``random_state=42``). Protocol ``clean``: the official
train (8,000) / test (2,717) split, with the vocabulary taken from the training sentences only.
"""

from __future__ import annotations

import re
import string
from pathlib import Path

import numpy as np

from .base import ProcessedDataset, RawFile, Source
from .text import (
    binary_bag_of_words,
    sklearn_split,
    sorted_vocabulary,
    term_name,
    unigrams_and_bigrams,
)

NAME = "semeval"
TASK = "classification"  # what the processed dataset is for (the config's experiments must agree)
PROTOCOLS = ("paper", "clean")
POSITIVE_RELATION = "Cause-Effect"
SEED = 42
TEST_SIZE = 0.25

TRAIN_FILE = RawFile("SemEval2010_task8_training/TRAIN_FILE.TXT",
                     "c22fee88957d245a4b1650c6743eb8c594dcdeffc6a2aa1fa6cced059eebf0e3")
TEST_FILE = RawFile("SemEval2010_task8_testing_keys/TEST_FILE_FULL.TXT",
                    "9ec7a35d5582b4da0fb72aa55a6121bc414ade573459e1dcf68bf189f8c18ae8")

SOURCES = (
    Source(
        # The task's own download link (semeval2.fbk.eu, task 8): the organisers' Google Drive file.
        url="https://drive.google.com/uc?export=download"
        "&id=0B_jQiLugGTAkMDQ5ZjZiMTUtMzQ1Yy00YWNmLWJlZDYtOWY1ZDMwY2U4YjFk",
        mirror_path="semeval2010_task8/SemEval2010_task8_all_data.zip",
        kind="zip",
        members=(TRAIN_FILE, TEST_FILE),
        strip=1,  # drop the archive's top folder SemEval2010_task8_all_data/
        max_unpacked=32 << 20,  # the whole zip unpacks to 4.1 MB
    ),
)

_RECORD = re.compile(r'^(\d+)\t"(.*)"$')
_ENTITY_TAG = re.compile(r"</?e[12]>")
_NO_PUNCT = str.maketrans("", "", string.punctuation)


def read_sentences(path: str | Path) -> tuple[list[int], list[str], list[str]]:
    """``(ids, sentences, relations)`` of a task file; sentences without quotes and entity tags."""
    lines = Path(path).read_bytes().decode("utf-8").replace("\r\n", "\n").split("\n")
    ids, sentences, relations = [], [], []
    for i, line in enumerate(lines):
        m = _RECORD.match(line)
        if m:
            ids.append(int(m.group(1)))
            sentences.append(_ENTITY_TAG.sub("", m.group(2)))
            relations.append(lines[i + 1].strip())
    if not ids:
        raise ValueError(f"{path}: no numbered sentences found")
    return ids, sentences, relations


def cause_effect_labels(relations: list[str]) -> np.ndarray:
    """1 where the relation is Cause-Effect(e1,e2) or Cause-Effect(e2,e1), else 0."""
    return np.array([r.startswith(POSITIVE_RELATION + "(") for r in relations], dtype=np.int64)


def sentence_words(sentence: str) -> list[str]:
    """The authors' tokens: commas removed, lowercased, punctuation deleted, split on spaces."""
    return sentence.replace(",", "").lower().translate(_NO_PUNCT).split(" ")


def prepare(raw_dir: str | Path, protocol: str = "paper") -> ProcessedDataset:
    """Sparse binary unigram+bigram features and Cause-Effect labels for ``protocol``."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"{NAME}: unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    raw_dir = Path(raw_dir)
    ids, sentences, relations = read_sentences(raw_dir / TRAIN_FILE.path)
    terms = [unigrams_and_bigrams(sentence_words(s)) for s in sentences]
    y = cause_effect_labels(relations)
    if protocol == "paper":
        vocabulary = sorted_vocabulary(t for doc in terms for t in doc)  # all 8,000: test words too
        train, test = sklearn_split(len(terms), TEST_SIZE, SEED)
        train_terms, test_terms = [terms[i] for i in train], [terms[i] for i in test]
        y_train, y_test = y[train], y[test]
        split = {
            "split": f"sklearn train_test_split(test_size={TEST_SIZE}, random_state={SEED}, shuffle=True) "
            "of TRAIN_FILE.TXT (the authors' call had no random_state)",
            "train_ids": [ids[i] for i in train],
            "test_ids": [ids[i] for i in test],
        }
    else:
        test_ids, test_sentences, test_relations = read_sentences(raw_dir / TEST_FILE.path)
        vocabulary = sorted_vocabulary(t for doc in terms for t in doc)  # training sentences only
        train_terms = terms
        test_terms = [unigrams_and_bigrams(sentence_words(s)) for s in test_sentences]
        y_train, y_test = y, cause_effect_labels(test_relations)
        split = {
            "split": "official: TRAIN_FILE.TXT / TEST_FILE_FULL.TXT, each in file order",
            "train_ids": ids,
            "test_ids": test_ids,
        }
    return ProcessedDataset(
        name=NAME, protocol=protocol, task=TASK, X_train=binary_bag_of_words(train_terms, vocabulary),
        y_train=y_train, X_test=binary_bag_of_words(test_terms, vocabulary), y_test=y_test,
        feature_names=[term_name(t) for t in vocabulary], class_names=["not Cause-Effect", "Cause-Effect"],
        meta={**split, "n_sentences": len(sentences), "n_cause_effect": int(y.sum()),
              "n_unigrams": sum(isinstance(t, str) for t in vocabulary),
              "preparation": ("authors' classification_causalrelation.py: quotes and <e1>/<e2> tags removed, commas "
                              "removed, lowercased, ASCII punctuation deleted, split on single spaces (the empty word "
                              "is kept), unigrams + adjacent bigrams, binary; words first then bigrams, each sorted")})
