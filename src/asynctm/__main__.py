"""``python -m asynctm``: the same as the ``asynctm`` command (:mod:`asynctm.cli`)."""

import sys

from .cli import main

sys.exit(main())
