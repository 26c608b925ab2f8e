"""Winogrande under lm-eval 0.5's multiple-input contract (``multiple_inputs: true``): the sentence up to its
blank, filled with each option, is a context; the rest of the sentence is the one continuation scored after
each; the target is the index of the right option."""


def doc_to_text(doc: dict) -> list[str]:
    head = doc["sentence"][: doc["sentence"].index("_")]
    return [head + doc["option1"], head + doc["option2"]]


def doc_to_choice(doc: dict) -> list[str]:
    return [doc["sentence"][doc["sentence"].index("_") + 1 :].strip()]


def doc_to_target(doc: dict) -> int:
    return int(doc["answer"]) - 1
