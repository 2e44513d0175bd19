"""Small modal dialogs: ask for one line of text, or pick one of a few choices. Each has its
own footer, over the screen below's (whose keys do not apply while the dialog is open); the
footer alone names their keys."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from ..widgets.footer import KbmemFooter


class DialogInput(Input):
    """An input whose enter shows in the footer. The input handles it, as before: after the
    keys typed ahead of it (a priority binding on the screen would read the text first)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "submit", "OK")]


class DialogOptions(OptionList):
    """An option list whose enter shows in the footer (handled by the list, in key order)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "select", "Choose")]


class PromptScreen(ModalScreen[str | None]):
    """One line of input; dismissed with the text, or None on escape."""

    CSS_PATH = "prompt.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, question: str, value: str = "", placeholder: str = ""):
        super().__init__()
        self.question = question
        self.value = value
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(self.question, markup=False, classes="question")
            yield DialogInput(self.value, placeholder=self.placeholder, select_on_focus=False)
        yield KbmemFooter()

    def on_mount(self) -> None:
        self.query_one(Input).cursor_blink = getattr(self.app, "cursor_blink", True)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ChoiceScreen(ModalScreen[str | None]):
    """Pick one of ``choices`` (``(value, label)``); None on escape."""

    CSS_PATH = "prompt.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, question: str, choices: list[tuple[str, str]], current: str = ""):
        super().__init__()
        self.question = question
        self.choices = choices
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(self.question, markup=False, classes="question")
            yield DialogOptions(
                *[Option(Content(label), id=value) for value, label in self.choices],
            )
        yield KbmemFooter()

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        for n, (value, _label) in enumerate(self.choices):
            if value == self.current:
                options.highlighted = n

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
