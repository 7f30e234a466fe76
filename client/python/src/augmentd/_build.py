"""python -m augmentd._build [--proto-root DIR] [--out DIR] [--force]: (re)generate the gRPC stubs.

See augmentd/_stubs.py; scripts may call this before using the package from a source checkout.
"""
import sys

from augmentd._stubs import main

if __name__ == "__main__":
    sys.exit(main())
