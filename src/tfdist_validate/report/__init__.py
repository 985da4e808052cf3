"""Everything the tool writes: the human summary, the JSON report and its schema, the termination message."""
