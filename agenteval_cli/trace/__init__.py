"""What one target call did: the recorder, the conversation and agent attribution."""
