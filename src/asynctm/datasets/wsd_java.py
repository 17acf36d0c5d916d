"""CoarseWSD-20 balanced, word ``java``: island (0, java_java) vs programming language (1);
3,726 train, 1,929 test. Preparation in :mod:`asynctm.datasets.coarsewsd20`."""

from __future__ import annotations

from functools import partial

from . import coarsewsd20

WORD = coarsewsd20.Word(
    name="wsd_java",
    word="java",
    n_train=3726,
    n_test=1929,
    sha256={
        "train.data.txt": "41985540770e104cae0a5f75bd85f395285326d83464a809577d309ce511c78b",
        "train.gold.txt": "5483ce1ad5840bd1b1791788003932c767e7177a69417a200dc60159e08198bc",
        "test.data.txt": "97412aa0bdb921e54593dcdabc837073bb97034d606dfa5bd0b703d5f5d0ef74",
        "test.gold.txt": "0e9a36bc201294c5d7283ccbf6fbca2515434dabf73116da2133132b7cadfa75",
        "classes_map.txt": "8eec3c0f0c5a2127e145b709c298a760612f4b14e077ea452ec42929ebe0f8d6",
    },
)
NAME = WORD.name
TASK = coarsewsd20.TASK
PROTOCOLS = coarsewsd20.PROTOCOLS
SOURCES = WORD.sources
load_rows = partial(coarsewsd20.load_rows, word=WORD)  # load_rows(raw_dir)
prepare = partial(coarsewsd20.prepare, WORD)  # prepare(raw_dir, protocol="paper")
