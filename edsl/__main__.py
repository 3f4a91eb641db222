"""`python -m edsl`: the `edsl` command (edsl.export.cli)."""
import sys

from .export.cli import main

sys.exit(main())
