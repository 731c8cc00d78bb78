"""Results the store cannot take as they are: each is stored with replacement characters or a
placeholder, or recorded as that example's error; the run completes either way."""


class ReprRaises:
    def __repr__(self):
        raise RuntimeError("no repr")


class StrRaises(Exception):
    def __str__(self):
        raise RuntimeError("no str")


def surrogate(inputs):
    return {"final_response": "half an emoji: \ud83d", "\udcff": "key"}


def bad_repr(inputs):
    return {"final_response": "ok", "thing": ReprRaises()}


def bad_str(inputs):
    raise StrRaises()


def bad_message(inputs):
    raise ValueError("cut short: \ud800")


def quotes(outputs):
    return {"key": "quotes", "score": 1.0, "comment": "quoted \udfff"}


def raises_bad_str(outputs):
    raise StrRaises()
