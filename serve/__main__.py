"""``python -m serve``: see serve/supervisor.py (``make serve WORKERS=N``)."""

import sys

from serve.supervisor import main

sys.exit(main())
