"""The template playground's engine: render chat templates, load response templates, trace model
output region by region, run models, check templates and talk to the Hub. Importable without gradio."""

from .diagnostics import Diagnostic, has_errors, line_col
from .render import RenderResult, render, select_template
from .response_spec import LoadedSpec, compile_spec, load_response_spec
from .trace import Segment, Trace, TraceResult, TraceStep, trace_text

__all__ = [
    "Diagnostic",
    "LoadedSpec",
    "RenderResult",
    "Segment",
    "Trace",
    "TraceResult",
    "TraceStep",
    "compile_spec",
    "has_errors",
    "line_col",
    "load_response_spec",
    "render",
    "select_template",
    "trace_text",
]
