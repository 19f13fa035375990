"""Plain-text and Markdown renderings of service results, shared by the CLI, the TUI and
snapshots (no Textual)."""
