"""The samebits library's own tests: run directly, no Copier (see helpers/project.py)."""
