"""Evaluators that raise or return garbage: each gives a null score with a reason."""


def raises(outputs):
    raise ZeroDivisionError("division by zero")


def garbage(outputs):
    return "looks fine to me"


def string_score(outputs):
    return {"key": "string_score", "score": "high"}


def returns_none(outputs):
    return None


def fine(outputs):
    return {"key": "fine", "score": 1.0}
