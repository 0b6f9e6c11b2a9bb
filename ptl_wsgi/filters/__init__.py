"""Template engines' builtin filters and tests as run-time functions for converted templates."""
