"""A well-behaved target, for specs whose fault lies elsewhere."""


def answer(inputs):
    return {"final_response": f"about {inputs.get('question')}"}


def lower(inputs):
    return {"final_response": inputs["question"].lower()}  # fails on a non-string question
