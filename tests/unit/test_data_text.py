"""The text datasets: stop words, the authors' tokenisers, and BBC Sport, 20 Newsgroups, SemEval-2010
Task 8 and IMDb prepared from the mirror (counts, fidelity to the authors' inputs, declared hashes).

The raw members are unpacked here from the mirror by a small local helper (independent of the fetch
machinery, which has its own tests); tests needing the mirror skip when it is absent.
"""

from __future__ import annotations

import json
import lzma
import shutil
import tarfile
import time
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from asynctm.datasets import bbc_sport, imdb, newsgroups20, semeval, text
from asynctm.datasets.base import (
    RawFolder,
    folder_digest,
    load_processed,
    save_processed,
    sha256_file,
)
from asynctm.datasets.stopwords import ENGLISH_STOP_WORDS, ENGLISH_STOP_WORDS_ORDERED

# ---------------------------------------------------------------------------------------------
# Unpacking the declared members from the mirror (local helper)
# ---------------------------------------------------------------------------------------------


def _strip(name: str, n: int) -> str | None:
    parts = [p for p in name.split("/") if p]
    return "/".join(parts[n:]) if len(parts) > n else None


def _wanted(source, rel: str) -> bool:
    return any(rel == m.path or rel.startswith(m.path.rstrip("/") + "/") for m in source.members)


def unpack_from_mirror(module, mirror: Path, raw_dir: Path) -> dict:
    """Place each declared member of ``module`` under ``raw_dir``; return per-top-folder counts
    of every file in the archives (to check the dataset's full size, not just the members)."""
    all_files: Counter = Counter()
    for source in module.SOURCES:
        path = mirror / source.mirror_path
        if source.optional and not path.exists():
            continue
        kind = source.mirror_kind or source.kind
        if kind == "xz":
            out = raw_dir / source.members[0].path
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(lzma.decompress(path.read_bytes()))
        elif kind == "file":
            out = raw_dir / source.members[0].path
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, out)
        elif kind == "zip":
            with zipfile.ZipFile(path) as z:
                for info in z.infolist():
                    rel = _strip(info.filename, source.strip)
                    if info.is_dir() or rel is None:
                        continue
                    all_files["/".join(rel.split("/")[:-1])] += 1
                    if _wanted(source, rel):
                        (raw_dir / rel).parent.mkdir(parents=True, exist_ok=True)
                        (raw_dir / rel).write_bytes(z.read(info))
        elif kind == "tar":
            with tarfile.open(path, "r:*") as t:
                for info in t:
                    rel = _strip(info.name, source.strip)
                    if not info.isfile() or rel is None:
                        continue
                    all_files["/".join(rel.split("/")[:-1])] += 1
                    if _wanted(source, rel):
                        (raw_dir / rel).parent.mkdir(parents=True, exist_ok=True)
                        (raw_dir / rel).write_bytes(t.extractfile(info).read())
        else:
            raise ValueError(kind)
    return dict(all_files)


@pytest.fixture(scope="module")
def raw(mirror, tmp_path_factory):
    """``raw(module) -> (raw_dir, file counts)``, unpacked once per dataset and test module."""
    cache: dict = {}

    def get(module):
        if module.NAME not in cache:
            raw_dir = tmp_path_factory.mktemp("raw") / module.NAME
            counts = unpack_from_mirror(module, mirror, raw_dir)
            cache[module.NAME] = (raw_dir, counts)
        return cache[module.NAME]

    return get


@pytest.fixture(scope="module")
def prepared(raw):
    """``prepared(module, protocol)``: the processed dataset, computed once, with its time."""
    cache: dict = {}

    def get(module, protocol="paper"):
        key = (module.NAME, protocol)
        if key not in cache:
            raw_dir, _ = raw(module)
            t0 = time.perf_counter()
            ds = module.prepare(raw_dir, protocol)
            cache[key] = ds
            print(f"{module.NAME}/{protocol}: prepared in {time.perf_counter() - t0:.1f} s")
        return cache[key]

    return get


def check_binary(X, n_rows: int, n_cols: int) -> None:
    assert X.shape == (n_rows, n_cols)
    data = X.data if sp.issparse(X) else np.asarray(X)
    assert set(np.unique(data)) <= {0, 1}


# ---------------------------------------------------------------------------------------------
# Stop words and tokenisers (no mirror needed)
# ---------------------------------------------------------------------------------------------


def test_stop_words_are_nltk_english_179():
    assert len(ENGLISH_STOP_WORDS_ORDERED) == 179
    assert ENGLISH_STOP_WORDS == frozenset(ENGLISH_STOP_WORDS_ORDERED)
    assert ENGLISH_STOP_WORDS_ORDERED[:5] == ("i", "me", "my", "myself", "we")
    assert ENGLISH_STOP_WORDS_ORDERED[-1] == "wouldn't"
    for w in ("you're", "that'll", "should've", "mightn't", "ma", "ain", "y", "o", "don"):
        assert w in ENGLISH_STOP_WORDS
    # The 2024 nltk_data list added these; the paper's 2020-21 list did not have them.
    for w in ("he'd", "i'm", "we're", "they've"):
        assert w not in ENGLISH_STOP_WORDS
    assert all(w == w.lower() and " " not in w for w in ENGLISH_STOP_WORDS)


def test_text_lines_are_universal_newlines_without_other_separators():
    assert text.text_lines("a\r\nb\rc\nd") == ["a\n", "b\n", "c\n", "d"]
    assert text.text_lines("a\x0cb\n") == ["a\x0cb\n"]  # a form feed does not end a line in a file
    assert text.text_lines("") == []


def test_drop_header_keeps_all_without_an_empty_line():
    assert text.drop_header(["Title\n", "\n", "body\n", "\n", "more"]) == ["body\n", "\n", "more"]
    assert text.drop_header(["a\n", " \n", "b\n"]) == ["a\n", " \n", "b\n"]


def test_novelty_tokeniser_follows_the_authors_steps():
    line = "The\tplayers' 'quoted' 'lead, 2004 it's X-Men ok £15.8m AB's don't\n"
    # tabs deleted ("Theplayers'"), quote quirk ("heplayers"), "'quoted'" -> "quoted", "'lead" ->
    # "lead", digits and short tokens and stop words dropped, "x-men" -> "xmen", "15.8m" -> "158m".
    assert text.novelty_line_tokens(line) == ["heplayers", "quoted", "lead", "xmen", "£158m", "ab's"]
    assert text.novelty_line_tokens("last word") == ["last", "wor"]  # no newline: last char lost
    assert text.novelty_document_tokens(b"Head line\n\nChelsea pay \xa315.8m today\n") == [
        "chelsea",
        "pay",
        "158m",
        "today",
    ]


def test_semeval_words_keep_empty_tokens():
    assert semeval.sentence_words("A  cut, (the) - end.") == ["a", "", "cut", "the", "", "end"]


def test_keras_words():
    assert imdb.keras_words("Ángela's <br />X-Men, 7/10!") == ["Ángela's", "br", "x", "men", "7", "10"]


# ---------------------------------------------------------------------------------------------
# IMDb n-gram features against a plain re-statement of the authors' loop (no mirror needed)
# ---------------------------------------------------------------------------------------------


def _reference_features(x_train, y_train, x_test, id_to_word, min_count, k):
    """The authors' procedure written plainly: phrase counts, dict order, dense chi2 selection."""
    from sklearn.feature_selection import SelectKBest, chi2

    def phrases(seq):
        terms = [id_to_word[i] for i in seq]
        return [" ".join(terms[j : j + n]) for n in (1, 2) for j in range(len(terms) - n + 1)]

    counts: dict = {}
    for seq in x_train:
        for p in phrases(seq):
            counts[p] = counts.get(p, 0) + 1
    bit = {p: i for i, p in enumerate(p for p, c in counts.items() if c >= min_count)}

    def dense(seqs):
        X = np.zeros((len(seqs), len(bit)), dtype=np.uint32)
        for r, seq in enumerate(seqs):
            for p in phrases(seq):
                if p in bit:
                    X[r, bit[p]] = 1
        return X

    Xtr, Xte = dense(x_train), dense(x_test)
    skb = SelectKBest(chi2, k=k).fit(Xtr, y_train)
    names = list(bit)
    return skb.transform(Xtr), skb.transform(Xte), [names[i] for i in skb.get_support(indices=True)]


def test_imdb_vectorised_features_equal_the_plain_loop():
    rng = np.random.default_rng(0)
    num_words = 40
    id_to_word = {i: f"w{i}" for i in range(3, num_words)}
    id_to_word.update({0: "<PAD>", 1: "<START>", 2: "<UNK>"})
    # Zipf-like ids so that some n-grams are frequent and chi2 ties occur.

    def draw(n):
        return np.minimum(rng.zipf(1.3, size=n), num_words - 1)

    x_train = [np.concatenate(([1], draw(rng.integers(1, 30)))).astype(np.int32) for _ in range(120)]
    x_test = [np.concatenate(([1], draw(rng.integers(1, 30)))).astype(np.int32) for _ in range(50)]
    x_train[5] = np.array([1], dtype=np.int32)  # a review of no words
    y_train = rng.integers(0, 2, size=120)
    Xtr, Xte, names, info = imdb.build_features(x_train, y_train, x_test, id_to_word, num_words, 3, 25)
    Rtr, Rte, rnames = _reference_features(x_train, y_train, x_test, id_to_word, 3, 25)
    assert names == rnames
    assert np.array_equal(Xtr.toarray(), Rtr) and np.array_equal(Xte.toarray(), Rte)
    assert info["n_candidates"] >= 25


def _tiny_acl_imdb(root: Path) -> dict:
    """A miniature aclImdb with a word index built the Keras way from its training reviews."""
    rng = np.random.default_rng(1)
    vocab = ["good", "bad", "film", "plot", "great", "awful", "it's", "the", "a", "br"]
    for split in ("train", "test"):
        for cls in ("pos", "neg"):
            folder = root / "aclImdb" / split / cls
            folder.mkdir(parents=True)
            for i in range(12):
                words = rng.choice(vocab, size=rng.integers(3, 15)).tolist()
                if split == "test" and i == 0:
                    words.append("unseen")  # a test-only word: Keras skipped it
                (folder / f"{i}_{7 if cls == 'pos' else 2}.txt").write_text(" ".join(words).title() + ".")
    counts = Counter()
    for f in sorted((root / "aclImdb" / "train").glob("*/*.txt")):
        counts.update(imdb.keras_words(f.read_text()))
    ranked = sorted(counts, key=lambda w: (-counts[w], w))
    word_index = {w: r + 1 for r, w in enumerate(ranked)}
    (root / "imdb_word_index.json").write_text(json.dumps(word_index))
    return word_index


def test_imdb_npz_path_gives_the_same_dataset(tmp_path, monkeypatch):
    word_index = _tiny_acl_imdb(tmp_path)
    raw = imdb.sequences_from_reviews(tmp_path, word_index)
    assert all(len(s) > 0 for s in raw["x_train"])
    small = {"num_words": 8, "min_count": 2, "n_features": 6}
    from_reviews = imdb.prepare(tmp_path, **small)

    # The npz as Keras stores it: object arrays of plain rank lists.
    npz = tmp_path / "imdb.npz"

    def obj(seqs):
        return np.array([list(map(int, s)) for s in seqs], dtype=object)

    with open(npz, "wb") as f:
        np.savez(
            f,
            x_train=obj(raw["x_train"]),
            y_train=raw["y_train"],
            x_test=obj(raw["x_test"]),
            y_test=raw["y_test"],
        )
    with pytest.raises(ValueError, match="refusing to unpickle"):
        imdb.prepare(tmp_path, **small)  # not Keras' file: its hash is checked before loading
    monkeypatch.setattr(imdb, "KERAS_NPZ", imdb.KERAS_NPZ.__class__("imdb.npz", sha256_file(npz)))
    from_npz = imdb.prepare(tmp_path, **small)
    assert from_npz.meta["sequences_from"].startswith("imdb.npz")
    assert from_reviews.meta["sequences_from"].startswith("aclImdb")
    assert from_npz.feature_names == from_reviews.feature_names
    for part in ("X_train", "X_test"):
        assert (getattr(from_npz, part) != getattr(from_reviews, part)).nnz == 0
    assert np.array_equal(from_npz.y_train, from_reviews.y_train)
    assert np.array_equal(from_npz.y_test, from_reviews.y_test)


# ---------------------------------------------------------------------------------------------
# Declared member hashes (the mirror's members verify)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("module", [bbc_sport, newsgroups20, semeval, imdb], ids=lambda m: m.NAME)
def test_declared_member_hashes(module, raw):
    raw_dir, _ = raw(module)
    for source in module.SOURCES:
        for m in source.members:
            p = raw_dir / m.path
            if source.optional and not p.exists():
                continue
            got = folder_digest(p) if isinstance(m, RawFolder) else sha256_file(p)
            assert got == (m.digest if isinstance(m, RawFolder) else m.sha256), m.path
    assert module.PROTOCOLS[0] == "paper"


# ---------------------------------------------------------------------------------------------
# BBC Sport and 20 Newsgroups
# ---------------------------------------------------------------------------------------------


def test_bbc_sport_counts_and_split(raw, prepared):
    _, files = raw(bbc_sport)
    per_class = {k.split("/")[-1]: v for k, v in files.items() if k.startswith("bbcsport/")}
    assert sum(per_class.values()) == 737
    assert (per_class["cricket"], per_class["football"], per_class["rugby"]) == (124, 265, 147)
    ds = prepared(bbc_sport)
    assert ds.task == "novelty" and ds.class_names == ["cricket", "football"]
    n = len(ds.feature_names)
    check_binary(ds.X_train, 194, n)  # 389 known documents, test_size=0.5 rounds the test half up
    check_binary(ds.X_test, 195, n)
    check_binary(ds.X_novel, 147, n)
    assert np.bincount(np.concatenate([ds.y_train, ds.y_test])).tolist() == [124, 265]
    assert ds.meta["documents_per_class"] == {"cricket": 124, "football": 265, "rugby": 147}
    # The vocabulary is exactly the training tokens, sorted; every training feature is used.
    assert ds.feature_names == sorted(set(ds.feature_names))
    assert (np.asarray(ds.X_train.sum(axis=0)) > 0).all()
    assert not set(ds.feature_names) & ENGLISH_STOP_WORDS
    assert all(len(w) > 2 and not w.isdigit() for w in ds.feature_names)


def test_bbc_sport_split_is_sklearns(prepared):
    from sklearn.model_selection import train_test_split

    ds = prepared(bbc_sport)
    sizes = (("cricket", 124), ("football", 265))
    docs = [f"bbcsport/{c}/{i:03d}.txt" for c, n in sizes for i in range(1, n + 1)]
    train, test = train_test_split(docs, test_size=0.5, random_state=42, shuffle=True)
    assert ds.meta["documents"]["train"] == train and ds.meta["documents"]["test"] == test


def test_bbc_sport_latin1_byte_is_dropped(raw):
    raw_dir, _ = raw(bbc_sport)
    data = (raw_dir / "bbcsport/football/105.txt").read_bytes()
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")
    tokens = text.novelty_document_tokens(data)
    assert "158m" in tokens and not any("\ufffd" in t for t in tokens)


def test_newsgroups20_counts_and_split(raw, prepared):
    _, files = raw(newsgroups20)
    per_group = {k.split("/")[-1]: v for k, v in files.items()}
    assert sum(per_group.values()) == 18828 and len(per_group) == 20
    assert per_group["comp.graphics"] == 973
    assert per_group["talk.politics.guns"] == 910
    assert per_group["rec.sport.baseball"] == 994
    ds = prepared(newsgroups20)
    assert ds.class_names == ["comp.graphics", "talk.politics.guns"]
    n = len(ds.feature_names)
    check_binary(ds.X_train, 941, n)
    check_binary(ds.X_test, 942, n)
    check_binary(ds.X_novel, 994, n)
    assert np.bincount(np.concatenate([ds.y_train, ds.y_test])).tolist() == [973, 910]
    assert ds.meta["documents"]["novel"][0].startswith("20news-18828/rec.sport.baseball/")


# ---------------------------------------------------------------------------------------------
# SemEval-2010 Task 8
# ---------------------------------------------------------------------------------------------


def _authors_cause_effect(mirror: Path) -> tuple[list[str], list[int]]:
    path = mirror / "paper_repo" / "cause_effect.txt"
    if not path.exists():
        pytest.skip(f"{path} not in the mirror")
    rows = [line.split("\t") for line in path.read_text().split("\n")[1:] if line]
    return [r[0] for r in rows], [int(r[1]) for r in rows]


def test_semeval_sentences_and_labels_equal_the_authors(raw, mirror):
    raw_dir, _ = raw(semeval)
    ids, sentences, relations = semeval.read_sentences(raw_dir / semeval.TRAIN_FILE.path)
    labels = semeval.cause_effect_labels(relations)
    assert ids == list(range(1, 8001)) and int(labels.sum()) == 1003
    theirs, their_labels = _authors_cause_effect(mirror)
    assert labels.tolist() == their_labels
    assert sentences == theirs


def test_semeval_paper_features(prepared):
    ds = prepared(semeval, "paper")
    assert sp.issparse(ds.X_train) and sp.issparse(ds.X_test)
    assert len(ds.feature_names) == 102176 == len(set(ds.feature_names))  # the paper's count
    check_binary(ds.X_train, 6000, 102176)
    check_binary(ds.X_test, 2000, 102176)
    assert int(ds.y_train.sum() + ds.y_test.sum()) == 1003
    assert sorted(ds.meta["train_ids"] + ds.meta["test_ids"]) == list(range(1, 8001))
    # Every feature occurs somewhere in the 8,000 sentences (the vocabulary includes the test part).
    used = np.asarray(ds.X_train.sum(axis=0)).ravel() + np.asarray(ds.X_test.sum(axis=0)).ravel()
    assert (used > 0).all()
    assert "" in ds.feature_names and "cause" in ds.feature_names and "caused by" in ds.feature_names


def test_semeval_clean_is_the_official_split(prepared):
    ds = prepared(semeval, "clean")
    n = len(ds.feature_names)
    check_binary(ds.X_train, 8000, n)
    check_binary(ds.X_test, 2717, n)
    assert (int(ds.y_train.sum()), int(ds.y_test.sum())) == (1003, 328)
    assert (np.asarray(ds.X_train.sum(axis=0)) > 0).all()  # vocabulary from training only
    assert ds.meta["test_ids"][0] == 8001


def test_semeval_round_trips_sparse(prepared, tmp_path):
    ds = prepared(semeval, "paper")
    save_processed(ds, tmp_path / "semeval")
    back = load_processed(tmp_path / "semeval")
    assert back.protocol == "paper" and back.feature_names == ds.feature_names
    assert sp.issparse(back.X_train) and (back.X_train != ds.X_train).nnz == 0
    assert np.array_equal(back.y_test, ds.y_test)


# ---------------------------------------------------------------------------------------------
# IMDb
# ---------------------------------------------------------------------------------------------

# Keras imdb.load_data(num_words=10000) x_train[0], as printed in TensorFlow's IMDb tutorial.
# fmt: off
KERAS_X_TRAIN_0 = [
    1, 14, 22, 16, 43, 530, 973, 1622, 1385, 65, 458, 4468, 66, 3941, 4, 173, 36, 256, 5, 25, 100, 43,
    838, 112, 50, 670, 2, 9, 35, 480, 284, 5, 150, 4, 172, 112, 167, 2, 336, 385, 39, 4, 172, 4536,
    1111, 17, 546, 38, 13, 447, 4, 192, 50, 16, 6, 147, 2025, 19, 14, 22, 4, 1920, 4613, 469, 4, 22,
    71, 87, 12, 16, 43, 530, 38, 76, 15, 13, 1247, 4, 22, 17, 515, 17, 12, 16, 626, 18, 2, 5, 62, 386,
    12, 8, 316, 8, 106, 5, 4, 2223, 5244, 16, 480, 66, 3785, 33, 4, 130, 12, 16, 38, 619, 5, 25, 124,
    51, 36, 135, 48, 25, 1415, 33, 6, 22, 12, 215, 28, 77, 52, 5, 14, 407, 16, 82, 2, 8, 4, 107, 117,
    5952, 15, 256, 4, 2, 7, 3766, 5, 723, 36, 71, 43, 530, 476, 26, 400, 317, 46, 7, 4, 2, 1029, 13,
    104, 88, 4, 381, 15, 297, 98, 32, 2071, 56, 26, 141, 6, 194, 7486, 18, 4, 226, 22, 21, 134, 476,
    26, 480, 5, 144, 30, 5535, 18, 51, 36, 28, 224, 92, 25, 104, 4, 226, 65, 16, 38, 1334, 88, 12, 16,
    283, 5, 16, 4472, 113, 103, 32, 15, 16, 5345, 19, 178, 32,
]
# fmt: on


@pytest.fixture(scope="module")
def imdb_sequences(raw):
    raw_dir, _ = raw(imdb)
    word_index = imdb.load_word_index(raw_dir / imdb.WORD_INDEX.path)
    return word_index, imdb.sequences_from_reviews(raw_dir, word_index)


def test_imdb_word_index_is_the_training_vocabulary(imdb_sequences):
    word_index, raw = imdb_sequences
    ranks = np.concatenate(raw["x_train"])
    # Every index word occurs in training and counts never rise with the rank.
    counts = np.bincount(ranks, minlength=len(word_index) + 1)[1:]
    assert len(word_index) == 88584 and (counts > 0).all()
    assert (np.diff(counts) <= 0).all()


def test_imdb_sequences_match_published_keras_facts(imdb_sequences):
    _, raw = imdb_sequences
    x_train, y_train, x_test, _ = imdb.keras_load_data(raw, num_words=10000, index_from=3)
    assert (len(x_train), len(x_test)) == (25000, 25000)
    assert x_train[0].tolist() == KERAS_X_TRAIN_0
    assert len(x_train[1]) == 189
    assert y_train[:10].tolist() == [1, 0, 0, 1, 0, 0, 1, 0, 1, 0]
    lengths = np.array([len(s) for s in x_train + x_test])
    assert round(float(lengths.mean()), 2) == 234.76
    assert round(float(lengths.std()), 2) == 172.91
    assert max(len(s) for s in x_train) == 2494 and max(len(s) for s in x_test) == 2315


def test_imdb_paper_features(prepared):
    ds = prepared(imdb)
    assert ds.meta["sequences_from"].startswith("aclImdb")
    check_binary(ds.X_train, 25000, 5000)
    check_binary(ds.X_test, 25000, 5000)
    assert len(ds.feature_names) == len(set(ds.feature_names)) == 5000
    assert np.bincount(ds.y_train).tolist() == [12500, 12500]
    assert np.bincount(ds.y_test).tolist() == [12500, 12500]
    # Terms are index words of rank <= 4,997, <START> and <UNK>, single or in pairs.
    words = {w for name in ds.feature_names for w in name.split(" ")}
    assert {"<START>", "<UNK>"} <= words and len(words) < 4997 + 2
    assert "great" in ds.feature_names and "worst" in ds.feature_names


def test_imdb_npz_hash_is_keras():
    assert imdb.KERAS_NPZ.sha256.startswith("69664113be75683a")
    optional = [s for s in imdb.SOURCES if s.optional]
    assert [s.members[0].path for s in optional] == ["imdb.npz"]


def test_official_urls_are_declared():
    urls = {m.NAME: [s.url for s in m.SOURCES] for m in (bbc_sport, newsgroups20, semeval, imdb)}
    assert urls["bbc_sport"] == ["http://mlg.ucd.ie/files/datasets/bbcsport-fulltext.zip"]
    assert urls["newsgroups20"] == ["http://qwone.com/~jason/20Newsgroups/20news-18828.tar.gz"]
    assert "ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz" in urls["imdb"][0]
    assert urls["imdb"][1].endswith("tf-keras-datasets/imdb_word_index.json")
    assert urls["imdb"][2].endswith("tf-keras-datasets/imdb.npz")
