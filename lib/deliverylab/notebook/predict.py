"""A prediction the student commits to before a run, and its reveal beside the outcome.

Why a first-class thing: students who only watch a demonstration learn little more
than those who never saw it; students who predict the outcome first, and commit to it,
learn measurably more (Crouch, Fagen, Callan and Mazur, Am. J. Phys. 72, 835 (2004)).
So a chapter asks a :class:`Question` before the run whose outcome is the lesson:

- :class:`Prediction` -- in JupyterLab a small widget (a number box, radio buttons or
  check boxes, and a **Commit** button); headless, the chapter's papermill parameter
  (``predict_<name>``) stands for it and commits it at once. Once committed it is
  locked: the point is to commit before seeing.
- :meth:`Prediction.require` -- the run cell (or the reveal) refuses, in one line,
  until a prediction was committed.
- :func:`reveal` -- the prediction beside what happened: which part was right, and the
  concept behind the difference (never just "wrong"). It records both in the chapter's
  results file (``Chapter.to_dict()["predictions"]``), where the instructor's view
  counts them (:mod:`deliverylab.classroom.instructor.view`).

The course's questions, and how each outcome is computed from a run, are in
:mod:`deliverylab.notebook.questions`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import ipywidgets as W

from ..errors import LabError, bad_value

if TYPE_CHECKING:
    from .chapter import Chapter

#: What a prediction can be: a number, one of named outcomes, or a set of them.
KINDS = ("number", "choice", "set")


class PredictionMissing(LabError):
    """A reveal (or the run it reveals) was asked for before a prediction was committed."""

    def _render_traceback_(self) -> list[str]:
        """IPython shows this instead of a traceback: the refusal is one line, and a
        student who skipped the widget needs no stack to act on it."""
        return [f"{type(self).__name__}: {self}"]


@dataclass(frozen=True)
class Question:
    """One question a chapter asks before a run.

    Args:
        name: ``"<chapter number>_<short>"``, e.g. ``"00_moved"``; the chapter's
            parameter is ``predict_<short>``.
        text: the question as the student reads it.
        kind: ``number``, ``choice`` (one of ``choices``) or ``set`` (any of them).
        choices: ``(value, label)`` pairs for ``choice`` and ``set``.
        concept: the idea behind the outcome, shown at every reveal, right or wrong.
        why: per outcome value, what that outcome means; shown for the outcome that
            happened and for a predicted one that did not, so that a wrong prediction
            meets the reason it was wrong.
        tolerance: for numbers, how far off still counts as right (0: exactly).
    """

    name: str
    text: str
    kind: str
    choices: tuple[tuple[Any, str], ...] = ()
    concept: str = ""
    why: Mapping[Any, str] = field(default_factory=dict)
    tolerance: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise bad_value("kind", self.kind, "one of " + ", ".join(map(repr, KINDS)))
        if self.kind != "number" and not self.choices:
            raise bad_value("choices", self.choices, f"(value, label) pairs for a {self.kind}")

    @property
    def parameter(self) -> str:
        """The chapter's papermill parameter that stands for this prediction."""
        return "predict_" + self.name.split("_", 1)[1]

    def values(self) -> list[Any]:
        return [v for v, _ in self.choices]

    def label(self, value: Any) -> str:
        return dict(self.choices).get(value, str(value))

    def accepted(self, choices: Iterable[Any] | None = None) -> str:
        """What this question accepts, in words (for a one-line refusal)."""
        if self.kind == "number":
            return "a number, e.g. 10"
        shown = ", ".join(map(repr, choices if choices is not None else self.values()))
        return (f"one of {shown}" if self.kind == "choice"
                else f"a list of items from {shown}, e.g. [{shown.split(', ')[0]}]")

    def check(self, name: str, value: Any, choices: Iterable[Any] | None = None) -> Any:
        """``value`` normalised (a number, a choice, a sorted list), or one clear line."""
        allowed = list(choices) if choices is not None else self.values()
        if self.kind == "number":
            if isinstance(value, str):
                try:
                    value = float(value.strip())
                except ValueError:
                    raise bad_value(name, value, self.accepted()) from None
            if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                    isinstance(value, float) and not math.isfinite(value)):
                raise bad_value(name, value, self.accepted())
            return int(value) if float(value).is_integer() else float(value)
        if self.kind == "choice":
            if value not in allowed:
                raise bad_value(name, value, self.accepted(allowed))
            return value
        if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
            raise bad_value(name, value, self.accepted(allowed))
        items = list(value)
        bad = [v for v in items if v not in allowed]
        if bad:
            raise bad_value(f"{name} item", bad[0], "items from " + ", ".join(map(repr, allowed)))
        return sorted(set(items), key=allowed.index)


# --- the widget ---------------------------------------------------------------------------


class Prediction(W.VBox):
    """A question, a place to answer it, and a **Commit** button.

    ``Prediction(question, value=predict_moved, chapter=chapter)``: a ``value`` (the
    papermill parameter) commits at once, as a headless run needs; ``None`` leaves it
    to the student. ``choices`` narrows the question's choices to this run's (chapter
    0's partitions). :meth:`commit` is what the button calls.
    """

    def __init__(self, question: Question, value: Any = None, *,
                 chapter: Chapter | None = None, choices: Iterable[Any] | None = None) -> None:
        self.question = question
        self.chapter = chapter
        self.choices = ([(v, question.label(v)) for v in choices] if choices is not None
                        else list(question.choices))
        for v, _ in self.choices:
            if v not in question.values() and question.kind != "number":
                raise bad_value("choices item", v, "values of question " + question.name)
        self.value: Any = None
        self.source: str | None = None  # "parameter" or "widget"
        self.revealed = False
        self.status = W.HTML()
        self.status.add_class("dl-prediction-status")
        self.inputs = self._inputs()
        self.button = W.Button(description="Commit my prediction", button_style="primary",
                               layout=W.Layout(width="auto"))
        self.button.add_class("dl-prediction-commit")
        self.button.on_click(lambda _b: self._clicked())
        heading = W.HTML(f"<b>Predict first:</b> {html.escape(question.text)}")
        super().__init__([heading, *self.inputs, self.button, self.status],
                         layout=W.Layout(border="1px solid #ccc", padding="6px"))
        self.add_class("dl-prediction")
        self._show("not committed yet: answer, then press Commit")
        if value is not None:
            self.commit(value, source="parameter")

    # ------------------------------------------------------------------ input
    def _inputs(self) -> list[W.Widget]:
        if self.question.kind == "number":
            box = W.Text(placeholder="a number", layout=W.Layout(width="12em"))
            box.add_class("dl-prediction-number")
            return [box]
        if self.question.kind == "choice":
            radio = W.RadioButtons(options=[(label, v) for v, label in self.choices],
                                   value=None, layout=W.Layout(width="auto"))
            radio.add_class("dl-prediction-choice")
            return [radio]
        boxes = [W.Checkbox(value=False, description=label, indent=False)
                 for _, label in self.choices]
        for box in boxes:
            box.add_class("dl-prediction-item")
        return [W.HBox(boxes, layout=W.Layout(flex_flow="row wrap"))] if len(boxes) <= 4 \
            else [W.VBox(boxes)]

    def entered(self) -> Any:
        """What the inputs hold now (unchecked)."""
        first = self.inputs[0]
        if self.question.kind == "number":
            return first.value
        if self.question.kind == "choice":
            return first.value
        return [v for (v, _), box in zip(self.choices, first.children, strict=True)
                if box.value]

    def _clicked(self) -> None:
        try:
            self.commit(self.entered())
        except LabError as exc:  # shown under the button; the click must not traceback
            self._show(str(exc), error=True)

    # ----------------------------------------------------------------- commit
    def commit(self, value: Any, source: str = "widget") -> Any:
        """Commit ``value`` (checked against the question): from now on it is locked."""
        if self.value is not None:
            raise LabError(f"the prediction for {self.question.name} is already committed "
                           f"({self.shown(self.value)}): a prediction is made once")
        if self.question.kind == "choice" and value is None:
            raise bad_value(self.question.parameter, value, "a choice: pick one first")
        if self.question.kind == "number" and value in (None, ""):
            raise bad_value(self.question.parameter, value, "a number: type one first")
        self.value = self.question.check(self.question.parameter, value,
                                         [v for v, _ in self.choices]
                                         if self.question.kind != "number" else None)
        self.source = source
        for widget in [*self.inputs, self.button]:
            widget.disabled = True
            for child in getattr(widget, "children", ()):
                child.disabled = True
        via = " (the run's parameter)" if source == "parameter" else ""
        self._show(f"committed{via}: {self.shown(self.value)}. Now run the next cells.")
        return self.value

    @property
    def committed(self) -> bool:
        return self.value is not None

    def require(self) -> Any:
        """The committed value, or :class:`PredictionMissing` in one line."""
        if self.value is None:
            raise PredictionMissing(
                f"commit your prediction first ({self.question.text}): answer in the "
                f"box above and press Commit, then run this cell again (headless: "
                f"-p {self.question.parameter} ...)")
        return self.value

    def shown(self, value: Any) -> str:
        """A value in words: labels for choices, ``(none)`` for an empty set."""
        if self.question.kind == "set":
            return ", ".join(self.question.label(v) for v in value) or "(none)"
        return self.question.label(value) if self.question.kind == "choice" else str(value)

    def _show(self, text: str, error: bool = False) -> None:
        self.status_text = text
        color = "#D55E00" if error else "#333"
        self.status.value = f"<span style='color:{color}'>{html.escape(text)}</span>"

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        """Widget view plus a text form, for a papermill output without a widget manager."""
        data = super()._repr_mimebundle_(**kwargs) or {}
        data["text/plain"] = f"Predict first: {self.question.text}\n{self.status_text}"
        return data

    def __repr__(self) -> str:
        return f"<Prediction {self.question.name}: {self.status_text}>"


# --- the reveal ---------------------------------------------------------------------------


@dataclass
class Reveal:
    """The prediction beside what happened; markdown in a notebook, text elsewhere."""

    question: Question
    predicted: Any
    actual: Any
    right: bool
    #: (what, verdict) lines: which part of the prediction was right, which not.
    parts: list[tuple[str, str]]
    parts_right: int
    parts_total: int
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        """The entry of the results file (``predictions`` of the chapter)."""
        return {"name": self.question.name, "question": self.question.text,
                "kind": self.question.kind, "predicted": self.predicted,
                "actual": self.actual, "right": self.right,
                "parts_right": self.parts_right, "parts": self.parts_total}

    def _lines(self) -> list[tuple[str, str]]:
        return [("you predicted", _words(self.question, self.predicted)),
                ("what happened", _words(self.question, self.actual)),
                ("verdict", "right" if self.right else "not what happened"
                 if self.parts_total == 1 else
                 f"{self.parts_right} of {self.parts_total} parts right")]

    def _repr_markdown_(self) -> str:
        rows = "\n".join(f"| {a} | {b} |" for a, b in self._lines())
        parts = "\n".join(f"- **{what}**: {verdict}" for what, verdict in self.parts)
        notes = "\n\n".join(self.notes)
        return (f"#### Your prediction, beside the run\n\n*{self.question.text}*\n\n"
                f"| | |\n|---|---|\n{rows}\n\n{parts}\n\n{notes}\n\n"
                f"**The idea.** {self.question.concept}")

    def __str__(self) -> str:
        lines = [f"Prediction: {self.question.text}",
                 *(f"  {a}: {b}" for a, b in self._lines()),
                 *(f"  - {what}: {verdict}" for what, verdict in self.parts),
                 *self.notes, f"The idea: {self.question.concept}"]
        return "\n".join(lines)

    __repr__ = __str__


def _words(question: Question, value: Any) -> str:
    if question.kind == "set":
        return ", ".join(question.label(v) for v in value) or "(none)"
    return question.label(value) if question.kind == "choice" else str(value)


def compare(question: Question, predicted: Any, actual: Any,
            choices: Iterable[Any] | None = None) -> Reveal:
    """Compare a committed prediction with the run's outcome (no widget, no recording:
    what :func:`reveal` shows and records, unit-testable on its own)."""
    notes: list[str] = []
    why = question.why
    if question.kind == "number":
        off = actual - predicted
        right = abs(off) <= question.tolerance
        verdict = ("right" if right else
                   f"the run gave {abs(off):g} {'more' if off > 0 else 'fewer'} than you said")
        parts = [("the number", verdict)]
        return Reveal(question, predicted, actual, right, parts, int(right), 1, notes)
    if question.kind == "choice":
        right = predicted == actual
        parts = [(question.label(predicted), "what happened" if right else "not what happened")]
        if actual in why:
            notes.append(f"**{question.label(actual)}** (what happened): {why[actual]}")
        if not right and predicted in why:
            notes.append(f"**{question.label(predicted)}** (your prediction): {why[predicted]}")
        return Reveal(question, predicted, actual, right, parts, int(right), 1, notes)
    universe = list(choices) if choices is not None else question.values()
    said, was = set(predicted), set(actual)
    parts = []
    for v in universe:
        if v in said and v in was:
            verdict = "right: you said so, and it happened"
        elif v in was:
            verdict = "missed: it happened, you did not predict it"
        elif v in said:
            verdict = "not so: you predicted it, it did not happen"
        else:
            continue  # left out, rightly: counted, not listed
        parts.append((question.label(v), verdict))
        if v in why and (v in was or v in said):
            notes.append(f"**{question.label(v)}**: {why[v]}")
    parts_right = sum((v in said) == (v in was) for v in universe)
    return Reveal(question, sorted(said, key=universe.index), sorted(was, key=universe.index),
                  said == was, parts, parts_right, len(universe), notes)


def reveal(prediction: Prediction, actual: Any) -> Reveal:
    """Show ``prediction`` beside what the run gave (``actual``): which part was right
    and the concept behind the difference; record both in the prediction's chapter.

    Refuses in one line (:class:`PredictionMissing`) until a prediction was committed:
    a reveal before a commit would turn the prediction into a copy."""
    predicted = prediction.require()
    q = prediction.question
    universe = [v for v, _ in prediction.choices] if q.kind != "number" else None
    actual = q.check(f"actual outcome of {q.name}", actual, universe)
    shown = compare(q, predicted, actual, universe)
    prediction.revealed = True
    prediction._show(f"committed: {prediction.shown(predicted)}; revealed below: "
                     + ("right" if shown.right else "see what differed"))
    if prediction.chapter is not None:
        prediction.chapter.record_prediction({**shown.to_dict(), "source": prediction.source})
    return shown


__all__ = ["KINDS", "Prediction", "PredictionMissing", "Question", "Reveal", "compare",
           "reveal"]
