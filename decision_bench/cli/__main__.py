"""``python -m decision_bench.cli``: the ``decision-bench`` program."""

import sys

from decision_bench.cli.program import main

sys.exit(main())
