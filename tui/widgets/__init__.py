"""Widgets shared by the screens: the chat log, the research trace, the status bar."""
