"""``python -m dsbo.train``: the program lives in :mod:`dsbo.cli.train`."""

import sys

from dsbo._compat import forward_attributes

__getattr__ = forward_attributes(__name__, "dsbo.cli.train")

if __name__ == "__main__":
    from dsbo.cli.train import main

    sys.exit(main())
