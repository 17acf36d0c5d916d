"""20 Newsgroups, the 18,828-post version (duplicates removed, headers cut to From:/Subject:),
as the paper's second novelty-detection task (Section 5).

Known classes comp.graphics and talk.politics.guns are learnt; rec.sport.baseball is the novel
class. Preparation is the BBC Sport one (:func:`asynctm.datasets.text.novelty_dataset`): the header
lines up to the first empty line are dropped. Only the three groups used are read and verified.
"""

from __future__ import annotations

from pathlib import Path

from .base import ProcessedDataset, RawFolder, Source
from .text import novelty_dataset

NAME = "newsgroups20"
TASK = "novelty"  # what the processed dataset is for (the config's experiments must agree)
PROTOCOLS = ("paper",)
KNOWN_CLASSES = ("comp.graphics", "talk.politics.guns")
NOVEL_CLASSES = ("rec.sport.baseball",)
SEED = 42

SOURCES = (
    # The mirror holds the same members repacked as .tar.xz; verification is on the members. The tar (the mirror's
    # .tar.xz, as the official .tar.gz: the same 18,828 posts) is 48 MB unpacked.
    Source(url="http://qwone.com/~jason/20Newsgroups/20news-18828.tar.gz",
           mirror_path="20newsgroups/20news-18828.tar.xz", kind="tar",
           members=tuple(RawFolder(f"20news-18828/{group}", digest) for group, digest in (
               ("comp.graphics", "8804e1a257d6a569e6f9a8c81e1649a8c1a650c5e286c783b0c5cb839233c406"),
               ("talk.politics.guns", "3b29b148b474700c271ef5d7412b1ce811f803bdb84ce5e4155230898bcdf835"),
               ("rec.sport.baseball", "a2593036c69695e35c037400cda097d11b0ce845673c75b7827cde1b811db9fa"))),
           max_unpacked=128 << 20),
)


def prepare(raw_dir: str | Path, protocol: str = "paper") -> ProcessedDataset:
    """Binary bags of words: known-class train/test (50/50, seed 42) and novel baseball posts."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"{NAME}: unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    return novelty_dataset(NAME, protocol, Path(raw_dir) / "20news-18828", KNOWN_CLASSES, NOVEL_CLASSES, SEED,
                           raw_prefix="20news-18828/")
