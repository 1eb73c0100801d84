"""Pure resource rules, no I/O: what a compute node can still give."""
