"""``python -m edaqa_pipeline.cli``."""

from edaqa_pipeline.cli import main

raise SystemExit(main())
