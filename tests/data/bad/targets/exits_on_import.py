"""A target module that exits while being imported."""

import sys

sys.exit(0)
