"""Console entry points: ``scheduler-service`` and ``scheduler-manage``."""
