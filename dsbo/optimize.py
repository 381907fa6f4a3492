"""``python -m dsbo.optimize``: the program lives in :mod:`dsbo.cli.optimize`."""

import sys

from dsbo._compat import forward_attributes

__getattr__ = forward_attributes(__name__, "dsbo.cli.optimize")

if __name__ == "__main__":
    from dsbo.cli.optimize import main

    sys.exit(main())
