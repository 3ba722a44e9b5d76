"""Django's SQLite backend with the placeholder conversion cached (issue 11)."""
