"""A plain-function target that imports its LangGraph graph only when first called."""


def target(inputs: dict) -> dict:
    import travel_graphs  # loads langchain and langgraph on the first call

    return travel_graphs.supervisor_target(inputs)
