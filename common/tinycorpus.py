"""The tiny model's tokenizer training text: English-like sentences, numbers, punctuation, Python-like code,
"Question:/Answer:" and multiple-choice layouts, generated from a fixed seed (``random.Random``), so the
tokenizer trained on it (``tinymodel.build_tokenizer_json``) is the same on every machine.

Part of the tiny model's recipe: its bytes feed ``tinymodel``'s source hash, so an edit here rebuilds cached
models (and changes the tokenizer hash, which the release lock pins).
"""

from __future__ import annotations

import random

CORPUS_SEED = 1234

_WORDS = """
the of and to a in is it you that he was for on are with as I his they be at one have this from or had by
not word but what some we can out other were all there when up use your how said an each she which do their
time if will way about many then them write would like so these her long make thing see him two has look
more day could go come did number sound no most people my over know water than call first who may down side
been now find any new work part take get place made live where after back little only round man year came
show every good me give our under name very through just form sentence great think say help low line differ
turn cause much mean before move right boy old too same tell does set three want air well also play small end
put home read hand port large spell add even land here must big high such follow act why ask men change went
light kind off need house picture try us again animal point mother world near build self earth father head
stand own page should country found answer school grow study still learn plant cover food sun four between
state keep eye never last let thought city tree cross farm hard start might story saw far sea draw left late
run don't while press close night real life few north open seem together next white children begin got walk
example ease paper group always music those both mark often letter until mile river car feet care second book
carry took science eat room friend began idea fish mountain stop once base hear horse cut sure watch color
face wood main enough plain girl usual young ready above ever red list though feel talk bird soon body dog
family direct pose leave song measure door product black short numeral class wind question happen complete
ship area half rock order fire south problem piece told knew pass since top whole king space heard best hour
better true during hundred five remember step early hold west ground interest reach fast verb sing listen six
table travel less morning ten simple several vowel toward war lay against pattern slow center love person
money serve appear road map rain rule govern pull cold notice voice unit power town fine certain fly fall lead
cry dark machine note wait plan figure star box noun field rest correct able pound done beauty drive stood
contain front teach week final gave green oh quick develop ocean warm free minute strong special mind behind
clear tail produce fact street inch multiply nothing course stay wheel full force blue object decide surface
deep moon island foot system busy test record boat common gold possible plane stead dry wonder laugh thousand
ago ran check game shape equate hot miss brought heat snow tire bring yes distant fill east paint language
among energy temperature cell energy energy molecule atom gravity force mass speed acceleration reaction
chemical experiment hypothesis evidence theory organism species evolution climate weather rock mineral
volcano earthquake planet orbit solar lunar electric current magnet circuit battery light wave sound
president government law court history war century nation economy market price tax bank trade company
patient disease treatment doctor blood heart brain protein gene cause effect increase decrease
population function value equation variable solution probability statistic sample data analysis
social political cultural religious economic physical mental natural national international
because however therefore although whether which whose whom where while within without between
information development environment management relationship community organization university
following following statement statements describe describes explain explains best most least likely
student teacher children parent woman women man men child friend person people group member
company business customer product service price cost profit loss income interest rate account
water energy food plant animal cell body system structure process result change level rate
""".split()

_SUFFIXES = ["s", "s", "ed", "ing", "er", "ly", "tion", "ment", "ness", "al", "ity", "ive", "ous", "able"]
_PREFIXES = ["un", "re", "in", "dis", "pre", "non", "over", "inter", "sub"]

_NAMES = "John Mary Alice Bob James Sarah Tom Emma Liam Olivia Noah Ava Ethan Mia Lucas Zoe".split()
_PLACES = "Paris London Tokyo Berlin Madrid Rome Cairo Lima Oslo Delhi Texas Ohio Canada France Japan".split()
_SUBJECTS = (
    "abstract algebra,anatomy,astronomy,college biology,college chemistry,computer security,econometrics,"
    "high school physics,world history,moral scenarios,philosophy,virology"
).split(",")
_PUNCT = [".", ",", "!", "?", ";", ":", "...", " -", " (", ")", '"', "'", "—", "–", "’", "“", "”"]
_ACCENTED = ["café", "naïve", "résumé", "über", "São Paulo", "Zürich", "jalapeño", "façade", "€5", "°C", "×"]
_IDENTS = """x y n i j k s lst arr nums result count total value items text word key data self left right mid
ans res node""".split()
_FUNCS = """sum len max min sorted range print str int list dict set abs enumerate zip map filter isinstance
append split join strip""".split()


def _word(rng: random.Random) -> str:
    w = rng.choice(_WORDS)
    r = rng.random()
    if r < 0.25:
        w = w.rstrip("e") + rng.choice(_SUFFIXES) if len(w) > 3 else w + "s"
    elif r < 0.30:
        w = rng.choice(_PREFIXES) + w
    elif r < 0.36:
        w = w.capitalize()
    return w


def _sentence(rng: random.Random) -> str:
    n = rng.randint(4, 18)
    words = [_word(rng) for _ in range(n)]
    r = rng.random()
    if r < 0.15:
        words.insert(rng.randrange(len(words)), rng.choice(_NAMES))
    elif r < 0.25:
        words.insert(rng.randrange(len(words)), rng.choice(_PLACES))
    elif r < 0.32:
        words.insert(rng.randrange(len(words)), rng.choice(_ACCENTED))
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words)), _number(rng))
    if rng.random() < 0.25:
        k = rng.randrange(1, len(words))
        words[k - 1] = words[k - 1] + rng.choice(_PUNCT[1:])
    words[0] = words[0][:1].upper() + words[0][1:]
    return " ".join(words) + rng.choice([".", ".", ".", "!", "?"])


def _number(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.4:
        return str(rng.randint(0, 100))
    if r < 0.6:
        return str(rng.randint(100, 100000))
    if r < 0.7:
        return f"{rng.randint(0, 999)}.{rng.randint(0, 99):02d}"
    if r < 0.8:
        return f"${rng.randint(1, 9999):,}"
    if r < 0.9:
        return f"{rng.randint(1, 99)}%"
    return f"{rng.randint(1900, 2030)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _arithmetic(rng: random.Random) -> str:
    a, b = rng.randint(0, 500), rng.randint(1, 500)
    op = rng.choice(["+", "-", "*", "/"])
    value = {"+": a + b, "-": a - b, "*": a * b, "/": a // b}[op]
    name = rng.choice(_NAMES)
    return (
        f"Question: {name} has {a} apples and {rng.choice(['buys', 'sells', 'gives away'])} {b} more. "
        f"How many apples does {name} have?\nAnswer: {a} {op} {b} = <<{a}{op}{b}={value}>>{value}. "
        f"The answer is {value}.\n#### {value}"
    )


def _mcq(rng: random.Random) -> str:
    subject = rng.choice(_SUBJECTS)
    lines = [f"The following are multiple choice questions (with answers) about {subject}.", ""]
    for _ in range(rng.randint(1, 3)):
        lines.append(_sentence(rng)[:-1] + "?")
        for letter in "ABCD":
            lines.append(f"{letter}. {' '.join(rng.choice(_WORDS) for _ in range(rng.randint(1, 5)))}")
        lines.append(f"Answer: {rng.choice('ABCD')}")
        lines.append("")
    return "\n".join(lines)


def _qa(rng: random.Random) -> str:
    q = _sentence(rng)[:-1] + "?"
    a = rng.choice(
        [rng.choice(_WORDS), rng.choice(_NAMES), rng.choice(_PLACES), _number(rng)] + ["yes", "no", "true", "false"]
    )
    style = rng.random()
    if style < 0.5:
        return f"Question: {q}\nAnswer: {a}"
    if style < 0.7:
        return f"Q: {q}\nA: {a}"
    if style < 0.85:
        return f"{_sentence(rng)}\nQuestion: {q}\nAnswer:"
    return f"Goal: {q}\nSolution: {_sentence(rng)}"


def _code(rng: random.Random) -> str:
    f = rng.choice(["solve", "compute", "find_max", "is_prime", "count_words", "merge", "reverse", "fib"])
    a, b = rng.sample(_IDENTS, 2)
    g = rng.choice(_FUNCS)
    n = rng.randint(0, 20)
    body = rng.choice(
        [
            f"    {b} = 0\n    for {a} in range({n}):\n        {b} += {a}\n    return {b}\n",
            f"    if {a} == {n}:\n        return True\n    return {g}({a}) > {n}\n",
            f"    {b} = [{a} * {n} for {a} in {a}s if {a} % 2 == 0]\n    return {b}\n",
            f"    while {a} < {n}:\n        {a} = {a} + 1\n    return {{'{a}': {a}, \"{b}\": None}}\n",
            f"    try:\n        return {g}({a}, {b})\n    except (ValueError, KeyError) as e:\n        raise e\n",
        ]
    )
    doc = f'    """Return the {rng.choice(_WORDS)} of {a}.\n    >>> {f}({n})\n    {n * 2}\n    """\n'
    test = f"assert {f}({n}) == {n * 2}\nassert {f}([{n}, {n + 1}]) != []\n"
    head = rng.choice(["", "import math\n", "from typing import List\n\n", "import re\nimport sys\n\n"])
    return f"{head}def {f}({a}: int, {b}=None) -> int:\n{doc}{body}\n\n{test}"


def corpus_texts(n_docs: int = 12000, seed: int = CORPUS_SEED) -> list[str]:
    """The deterministic training text for the tokenizer, one string per pseudo-document."""
    rng = random.Random(seed)
    makers = [
        (0.40, lambda: " ".join(_sentence(rng) for _ in range(rng.randint(1, 6)))),
        (0.15, lambda: _qa(rng)),
        (0.10, lambda: _mcq(rng)),
        (0.10, lambda: _arithmetic(rng)),
        (0.20, lambda: _code(rng)),
        (0.05, lambda: " ".join(_number(rng) for _ in range(rng.randint(3, 12)))),
    ]
    texts: list[str] = []
    for _ in range(n_docs):
        r = rng.random()
        acc = 0.0
        for weight, make in makers:
            acc += weight
            if r < acc:
                texts.append(make())
                break
        else:
            texts.append(makers[-1][1]())
    return texts
