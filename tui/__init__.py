"""kbmem's terminal UI (Textual): chat with a live research trace, page history in git, and
the audit of any turn. The core package ``kbmem`` never imports this one."""
