def answer(inputs)
    return {}
