"""BBC Sport (Greene & Cunningham, ICML 2006), as the paper's novelty-detection task (Section 5).

Known classes cricket and football are learnt; rugby is the novel class. The raw text comes from
``bbcsport-fulltext.zip`` (``bbcsport/<class>/NNN.txt``, 737 documents in 5 classes); only the three
folders used are read and verified. ``football/105.txt`` holds one latin-1 byte (a pound sign):
documents are decoded as UTF-8 with undecodable bytes dropped, as the authors' script read them.
"""

from __future__ import annotations

from pathlib import Path

from .base import ProcessedDataset, RawFolder, Source
from .text import novelty_dataset

NAME = "bbc_sport"
TASK = "novelty"  # what the processed dataset is for (the config's experiments must agree)
PROTOCOLS = ("paper",)
KNOWN_CLASSES = ("cricket", "football")
NOVEL_CLASSES = ("rugby",)
SEED = 42

SOURCES = (
    Source(url="http://mlg.ucd.ie/files/datasets/bbcsport-fulltext.zip", mirror_path="bbc_sport/bbcsport-fulltext.zip",
           kind="zip",
           members=tuple(RawFolder(f"bbcsport/{cls}", digest) for cls, digest in (
               ("cricket", "02263ed8c54414742bf754e682775a8f0d9f6166732936cdcadfded12512ddb3"),
               ("football", "6c08d5960ed6c2562ed542f64b4c91c67cf413343c67cbc222849af68cc8741f"),
               ("rugby", "ea66b9424bca083da1fae8ec3fb889999e62ac9bca4a55029df30c13d9432106"))),
           max_unpacked=16 << 20),  # the whole zip unpacks to 1.4 MB
)


def prepare(raw_dir: str | Path, protocol: str = "paper") -> ProcessedDataset:
    """Binary bags of words: known-class train/test (50/50, seed 42) and the novel rugby documents."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"{NAME}: unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    return novelty_dataset(NAME, protocol, Path(raw_dir) / "bbcsport", KNOWN_CLASSES, NOVEL_CLASSES, SEED,
                           raw_prefix="bbcsport/")
