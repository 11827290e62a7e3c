"""The Dockerfile language, read only: BuildKit's parse into records, and word expansion."""
