"""``python -m kbmem``: the same as the ``kbmem`` command (handy in an MCP client's config)."""

import sys

from kbmem.cli import main

sys.exit(main())
