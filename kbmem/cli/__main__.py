"""``python -m kbmem.cli``: the same as the ``kbmem`` command."""

import sys

from . import main

sys.exit(main())
