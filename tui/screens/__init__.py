"""The screens of the terminal UI: chat, history, audit, help and small prompts."""
