"""``python -m kbmem.cli``: the same as the ``kbmem`` command."""

import sys

from kbmem.cli import main

sys.exit(main())
