"""The read model: experiments and their results from the store, files or LangSmith."""
