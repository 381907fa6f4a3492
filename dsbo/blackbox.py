"""``python -m dsbo.blackbox``: the program lives in :mod:`dsbo.cli.blackbox`."""

import sys

from dsbo._compat import forward_attributes

__getattr__ = forward_attributes(__name__, "dsbo.cli.blackbox")

if __name__ == "__main__":
    from dsbo.cli.blackbox import main

    sys.exit(main())
