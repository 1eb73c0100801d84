"""What a driver decides with: ``pipeline`` (prefilter, filter, weigh,
pick over the host view's table) and ``reservation`` (the claims of a
decision, all or none)."""
