"""CoarseWSD-20 balanced, word ``apple``: company (0, apple_inc.) vs fruit (1); 1,784 train, 1,032 test.

Preparation in :mod:`asynctm.datasets.coarsewsd20`. (The paper's text says 1,200 test samples;
the balanced release and the authors' ``apple.csv`` both have 1,032.)
"""

from __future__ import annotations

from functools import partial

from . import coarsewsd20

WORD = coarsewsd20.Word(
    name="wsd_apple",
    word="apple",
    n_train=1784,
    n_test=1032,
    sha256={
        "train.data.txt": "b62d105bfd11b4daf976c2a2a9fee8e7c36a8ecc27c1e04b6008ba7469f06819",
        "train.gold.txt": "7a8d22ece80abf5ef96a1a2fb7a2d87c8ac677027ac71de11956efb2485e816f",
        "test.data.txt": "bffbb40abd5d3c3792aaa405da9c21a8ce7d0c86037ddccfba9764bd2fca75ff",
        "test.gold.txt": "fa4d3833cb786b39f685793356585a3abd4a06266821de6d7eb7eea3c5afdb25",
        "classes_map.txt": "e64e645283dd7a4908539fc81c92fe307b5dcb83de32573fa769ab06a79c45de",
    },
)
NAME = WORD.name
TASK = coarsewsd20.TASK
PROTOCOLS = coarsewsd20.PROTOCOLS
SOURCES = WORD.sources
load_rows = partial(coarsewsd20.load_rows, word=WORD)  # load_rows(raw_dir)
prepare = partial(coarsewsd20.prepare, WORD)  # prepare(raw_dir, protocol="paper")
