"""Choosing which engine answers: the offline agent, the configured litellm model, the one in
use, or another model typed in; the choice starts a new chat (see ``KbmemApp.use_model``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .screens.prompt import ChoiceScreen, PromptScreen

if TYPE_CHECKING:
    from .app import KbmemApp

OFFLINE = ""  # the choice that means the offline agent
ANOTHER = "?"  # the choice that asks for a model's name


def engine_choices(configured: str | None, current: str) -> list[tuple[str, str]]:
    """``(value, label)`` of each engine to offer: offline, the configured and the current
    model (once each), and "another"."""
    choices = [(OFFLINE, "offline — the offline agent, no network")]
    for model in dict.fromkeys(m for m in (configured, current) if m):
        choices.append((model, f"{model} — litellm"))
    choices.append((ANOTHER, "another litellm model…"))
    return choices


def choose_engine(app: KbmemApp) -> None:
    """Ask which engine should answer (a dialog; a second one for a model's name)."""
    current = app.status.model or ""  # the latest choice, even before its chat opens

    def typed(name: str | None) -> None:
        if name and name.strip():
            app.use_model(name.strip())

    def chosen(value: str | None) -> None:
        if value == ANOTHER:
            prompt = PromptScreen(
                "litellm model (e.g. ollama/llama3, openai/gpt-4o-mini):",
                value=current,
                placeholder="provider/model",
            )
            app.push_screen(prompt, typed)
        elif value is not None:
            app.use_model(value)

    choices = engine_choices(app.workspace.kb.settings.model, current)
    app.push_screen(ChoiceScreen("Which engine should answer?", choices, current), chosen)
