"""``python -m decision_bench.cli``: the ``decision-bench`` program."""

import sys

from decision_bench.cli.program import main

# The `decision-bench` program starts from decision_bench_launcher.py instead, which
# installs the interrupt exit before this package (JAX, flax) is imported; here that
# import has already happened when main() installs it.

sys.exit(main())
