"""Private plumbing: the C library, tensor views, backends and the op engine."""
