"""``python -m cep.cli``: the ``cep`` command."""

import sys

from cep.cli import main

sys.exit(main())
