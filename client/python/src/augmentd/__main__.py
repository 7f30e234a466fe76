"""``python -m augmentd``: the client command line (see ``augmentd.cli``)."""
import sys

from augmentd.cli import format_server_info, main  # noqa: F401 (format_server_info: kept importable from here)

if __name__ == "__main__":
    sys.exit(main())
