"""python -m psda: the psda command line (see psda.cli)."""

import sys

from .cli import main

sys.exit(main())
