"""The Context layer: crop each request before the LLM call, never the stored history.

TRIM, SUMMARIZE, SLIDING_WINDOW and COMPOSITE strategies (first design document), run by the
ContextEditingInterceptor at order 30, and the SummarizationHook at order 50 as the emergency
brake. Every cut keeps tool calls and their results together (`memlab.units.orphans` finds broken ones).
"""

from memlab.context.base import ContextStrategy
from memlab.context.composite import Composite, default_pipeline
from memlab.context.hook import SummarizationHook, keep_head_and_tail
from memlab.context.interceptor import ContextEditingInterceptor
from memlab.context.sliding_window import SlidingWindow
from memlab.context.summarize import Summarize
from memlab.context.trim import Trim

__all__ = [
    "Composite",
    "ContextEditingInterceptor",
    "ContextStrategy",
    "SlidingWindow",
    "SummarizationHook",
    "Summarize",
    "Trim",
    "default_pipeline",
    "keep_head_and_tail",
]
