"""textkit: small text and number helpers (referee's demo project)."""
