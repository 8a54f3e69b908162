"""The notebook face: fault buttons, progress bars, plots, predictions, the chapter
verdict and its parameters. Only chapters and notebooks use it; the machinery never
imports it."""
