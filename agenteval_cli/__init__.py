"""agenteval: evaluate multi-agent LangGraph systems side by side from one YAML spec."""

__version__ = "0.1.0"
