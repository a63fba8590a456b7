"""``python -m soak``: see :mod:`soak.run`."""

from soak.run import main

raise SystemExit(main())
