"""``python -m dsbo.sweep``: the program lives in :mod:`dsbo.cli.sweep`."""

import sys

from dsbo._compat import forward_attributes

__getattr__ = forward_attributes(__name__, "dsbo.cli.sweep")

if __name__ == "__main__":
    from dsbo.cli.sweep import main

    sys.exit(main())
