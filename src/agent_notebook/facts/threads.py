"""Decisions and open threads read from one statement, and the closing of an open thread by
a later one: rules over the text, no model.

Precision first (a false decision is worse than a missed one):

* a **decision** is a sentence that says one was taken: a ``Decision:`` line (any speaker),
  or, from a speaker other than the assistant, "we decided / agreed / chose / settled on /
  opted for …", "we will go with …", "let's use / go with / switch to / stick with …".
  Questions, negations ("we have not decided"), conditions ("if we decide") and hedges
  ("we might go with") are not decisions. ``why`` is what follows "because", "since", "so
  that", "due to" or a "why:" / "reason:" label.
* a **pending item** is a commitment ("I'll …", "we will …", "I'm going to …") of a speaker
  other than the assistant (an assistant's "I'll explain" is a manner of speaking), a
  ``TODO:`` / ``Action item:`` / ``Next step:`` line, or an open question about the work
  ("should we …?", "who will …?", "when is …?", "have we decided …?"), not a request.
* a later statement **closes** an open item when it reports it done (a completion word or
  the commitment's verb in the past) and speaks of the same things (half of the item's
  content words at least), or, for a question, answers it: another speaker, no question,
  the same things.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

from ..core.lexical import stem
from .text import content_stems, sentences, spelled_out, word_set

__all__ = ["DecisionLine", "OpenLine", "closes", "decisions_in", "open_lines_in"]

PendingKind = Literal["commitment", "todo", "question"]


@dataclass(frozen=True, slots=True)
class DecisionLine:
    what: str
    why: str


@dataclass(frozen=True, slots=True)
class OpenLine:
    what: str
    kind: PendingKind
    #: The stem of the verb committed to ("send" for "I'll send the report"), if any.
    verb: str = ""
    #: What a closing statement must speak of, when not all of ``what`` ("should I go" of
    #: "Alan invited me to the gala, should I go?").
    about: str = ""


_LEAD: Final = (
    r"^(?:(?:ok(?:ay)?|so|alright|right|great|fine|then|well|good|yes|yeah|cool|scratch that|"
    r"actually|on second thought|no wait|change of plans?|update|agreed)\W+)*"
)
_LABELLED_DECISION: Final = re.compile(
    # "Decision: …" or "Decision - …", never "Decision-Making Framework" (a heading).
    r"^\W*(?:(?:ok(?:ay)?|so|right)\W+)?(?:(?:final\s+)?decision\s*(?:made\s*)?|decided|"
    r"final answer|verdict)(?::|\s[\-\u2013\u2014])\**\s*(\S.*)$",
    re.I,
)
_NOT_A_CHOICE: Final = re.compile(r"(?:what|how|where|who|which|it|that|this|so|here)\b", re.I)
#: "Agreed, Casa Lucia it is", "Casa Lucia it is then": a choice settled in a few words.
_IT_IS: Final = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|agreed|fine|great|deal|perfect|alright|yes|yeah|so)\W+)*"
    r"(?P<what>[^,.;!?]{2,60}?)\s+it is(?:\s+then)?\W*$",
    re.I,
)
_WHO: Final = r"(?:we|i|the team|everyone|everybody|all of us|the group|they)"
_DECIDED: Final = re.compile(
    _LEAD + r"(?:(?:after|following|in|at|during|for)\b[^,]{0,60}?,?\s+)?"
    rf"{_WHO}\s+(?:have\s+|has\s+|had\s+|finally\s+|just\s+|all\s+)*"
    r"(?:(?P<verb>decided|agreed|settled|opted|went)\s+(?P<rest>(?:to|on|that|for|with|upon|the|our|my)\b.*)"
    r"|(?P<pick>chose|chosen|picked|selected)\s+(?P<picked>(?!to\b|whether\b|between\b)\S.*))$"
)
_GOING_WITH: Final = re.compile(
    _LEAD
    + rf"{_WHO}\s+(?:will|are going to|am going to|are)\s+(?:go(?:ing)?\s+with|stick(?:ing)?\s+with|"
    r"standardi[sz](?:e|ing)\s+on|adopt(?:ing)?)\s+(?P<rest>.+)$"
)
_LETS: Final = re.compile(
    _LEAD
    + r"let us\s+(?:just\s+|instead\s+|definitely\s+)?(?P<verb>use|go with|switch to|stick with|"
    r"adopt|pick|keep|move to|standardi[sz]e on|migrate to|settle on|ship|drop|replace|order|book|"
    r"get|take|hold|invite|buy|hire|choose|host|meet)\s+(?P<rest>.+)$"
)
#: "I approved Ashlee's request", "I hired Stephanie's agency", "I'm prioritizing the script
#: over scouting": a choice made, said by what was done.
_ADOPTED: Final = re.compile(
    _LEAD + r"(?:i|we)\s+(?:have\s+|had\s+|just\s+|finally\s+|also\s+|now\s+)*"
    r"(?P<verb>approved|hired|declined|rejected|turned down|signed up for|committed to|"
    r"switched to|shifted (?:my |our )?focus (?:from [^,]+ )?to|am prioriti[sz]ing|are prioriti[sz]ing|"
    r"prioriti[sz]ed)\s+(?P<rest>\S.*)$"
)
#: "I'm gonna stick with Excel", "I think I'll go with training Michele": what is kept or
#: taken, hedged or not.
_KEEPING: Final = re.compile(
    _LEAD + r"(?:i|we)\s+(?:think\s+(?:i|we)\s+)?(?:will|am going to|are going to|am gonna|"
    r"are gonna)\s+(?:just\s+|probably\s+|definitely\s+)?(?:go with|stick with|keep using|"
    r"stay with|switch to)\s+(?P<rest>\S.*)$"
    r"|" + _LEAD + r"(?:i|we)\s+think\s+(?:i|we)\s+will\s+(?:just\s+|probably\s+|definitely\s+)?"
    r"(?P<also>(?:add|go to|start with|take|try|book|pick|choose)\s+\S.*)$"
)
#: Where a question starts that trails a statement ("…, can you help me…?").
_TRAILING_QUESTION: Final = re.compile(
    r"(?:^|[,;]\s*|\s)(?:but\s+|so\s+|and\s+)?(?:can you|could you|would you|was (?:that|this|it)|"
    r"is (?:that|this|it)|how (?:can|do|should|could|would|will)|what (?:are|is|should|do|would|can)|"
    r"will (?:this|that|it)|should i|am i|do you|any (?:tips|ideas|advice|thoughts)|"
    r"i(?:'m| am) (?:wondering|not sure|unsure)|i was wondering|does (?:that|this))\b",
    re.I,
)
_CLAUSE_SPLIT: Final = re.compile(r"\s*;\s*|,?\s+(?=(?:but|so|and|because)\s+(?:i|we)\b)", re.I)
_NOT_A_DECISION: Final = re.compile(
    r"\b(?:if|whether|unless|once|until|before|when|might|may|maybe|perhaps|could|should|"
    r"not|never|no one|nobody|yet to|not yet|about to decide|try|trying|considering|"
    r"thinking|wondering|need to decide|want to decide|have to decide)\b"
)
_WHY: Final = re.compile(
    r"\s*(?:[,;(\u2013\u2014-]\s*)?\b(?:because|since|so that|due to|given that|as it|as they|"
    r"why:|reason:|the reason being)\s+(.+)$"
)

_COMMITMENT: Final = re.compile(
    _LEAD + r"(?:i|we)\s+(?:will|shall|am going to|are going to|promise to|commit to)\s+"
    r"(?:also\s+|then\s+|first\s+|definitely\s+|still\s+)?(?P<verb>[a-z]+)\b(?P<rest>.*)$"
)
#: An obligation or a request to be reminded: "we still need to book the venue", "remind
#: me to call Dad", "someone needs to tell Raj", "don't forget to bring the cake".
_OBLIGATION: Final = re.compile(
    _LEAD + r"(?:(?:and|but|also|oh|btw)\W+)*(?:(?:i|we)\s+(?:still\s+|also\s+|really\s+)?"
    r"(?:need|have|ought|must remember|need to remember)\s+to|(?:someone|somebody|one of us)\s+"
    r"(?:still\s+)?(?:needs|has)\s+to|(?:please\s+)?remind me to|(?:do not|don't)\s+(?:let me\s+)?"
    r"forget to|let us not forget to|we must|we still have to|still need to|need to)\s+"
    r"(?:also\s+|still\s+|first\s+)?(?P<verb>[a-z]+)\b(?P<rest>.*)$"
)
#: A choice left open by the one who must make it: "should I take the offer?", "I'm
#: considering a second job", "wondering if I should go".
_UNDECIDED: Final = re.compile(
    r"\b(?:(?<!where )(?<!what )(?<!how )(?<!when )(?<!which )(?<!who )(?<!why )"
    r"should (?:i|we) (?!be\b)[a-z]+|(?:i|we) (?:am|are) (?:still )?(?:considering|debating|"
    r"torn between|thinking (?:of|about) [a-z]+ing)|wondering (?:if|whether) (?:i|we) should)\b"
)
#: A task names what it is about: a thing with a determiner, a name or a number.
_CONCRETE: Final = re.compile(
    r"\b(?:the|my|our|your|a|an|this|that|those|these|his|her|their)\b|\b[A-Z]\w+|\d"
)
#: What one "has to" do that is no task: "I need to be honest", "we have to admit".
_NOT_OBLIGED: Final = word_set("be have know think feel admit say mean wonder")
_NOT_COMMITTED: Final = word_set("""be have need never not probably maybe possibly try tell keep always see think feel
    guess assume wait consider let love like hate want wish hope bet admit say mean""")
_TODO: Final = re.compile(
    r"^\W*(?:todo|to-do|to do|action item|action|next steps?|follow[- ]up|open question)"
    r"\s*(?:is\s+to\s+|will be to\s+|[:\-\u2013\u2014])\s*(?P<rest>\S.*)$",
    re.I,
)
_OPEN_QUESTION: Final = re.compile(
    _LEAD
    + r"(?:should we|shall we|who (?:will|is going to|is|owns|takes)|when (?:is|are|will|do we|"
    r"does|should)|have we (?:decided|agreed|picked|chosen|settled)|did we (?:decide|agree|pick|"
    r"settle)|do we (?:know|have|need)|are we (?:going|still|ready)|is (?:anyone|someone|the)|"
    r"what(?: is|'s) the (?:plan|status|deadline|decision)|what about|which \w+ (?:should|will|do) we)\b"
)
#: A model saying it did the task itself: "Done: I've booked it", "I have sent the invite".
_DID_IT: Final = re.compile(
    r"^\W*done\b|\bi (?:have|just|already)\s+(?:just\s+|already\s+)?"
    r"(?:[a-z]+ed|sent|made|paid|set up|put)\b"
)
_REQUEST: Final = re.compile(r"\b(?:can you|could you|would you|will you|please|help me)\b")
_DONE: Final = re.compile(
    r"\b(?:done|did|finished|completed|complete|sent|fixed|merged|shipped|deployed|resolved|"
    r"closed|submitted|delivered|booked|paid|handled|sorted|taken care|wrapped up|released|"
    r"published|uploaded|updated|called|emailed|wrote|written|made|bought|checked|reviewed|"
    r"drafted|pushed|ordered|confirmed|arranged|scheduled|signed|renewed|returned|cancell?ed)\b"
    r"|\u2705|\u2714|\u2611"
)
_PAST: Final = {
    "send": "sent",
    "write": "wrote written",
    "do": "did done",
    "make": "made",
    "buy": "bought",
    "take": "took taken",
    "get": "got gotten",
    "find": "found",
    "run": "ran",
    "build": "built",
    "pay": "paid",
    "tell": "told",
    "give": "gave given",
    "bring": "brought",
    "set": "set",
    "put": "put",
    "read": "read",
    "pick": "picked",
    "ring": "rang",
    "draw": "drew drawn",
}


def decisions_in(text: str, role: str) -> list[DecisionLine]:
    """The decisions ``text`` states (prose, code removed). People decide in the middle of
    a run-on sentence ("I'm stressed about the cost, but I chose Adobe, was that a good
    call?"): each clause is read, and a question that trails a statement asks about it
    rather than unsaying it."""
    found = []
    for sentence in sentences(text):
        if m := _LABELLED_DECISION.match(sentence):
            found.append(_split_why(m[1]))
            continue
        if role == "assistant":
            continue
        if (m := _IT_IS.match(sentence)) and not _NOT_A_CHOICE.match(m["what"]):
            found.append(DecisionLine(m["what"].strip(), ""))
            continue
        stated = _without_trailing_question(sentence)
        if stated is None:
            continue
        for clause in _clauses(stated):
            if (decision := _decision_in(clause)) is not None:
                found.append(decision)
                break  # one decision a sentence: its clauses restate or qualify it
    return [d for d in found if len(d.what) >= 3]


def _decision_in(clause: str) -> DecisionLine | None:
    low = spelled_out(clause)
    m = (
        _DECIDED.match(low)
        or _GOING_WITH.match(low)
        or _LETS.match(low)
        or _ADOPTED.match(low)
        or _KEEPING.match(low)
    )
    if m is None:
        return None
    part = next(
        g for g in ("rest", "also", "picked") if m.re.groupindex.get(g) and m[g] is not None
    )
    if _NOT_A_DECISION.search(low[: m.start(part)]):
        return None
    rest = m[part]
    if m.re is _LETS:
        if m["verb"] == "keep" and re.match(r"[a-z]+ing\b", rest):
            return None  # "let's keep going": a cheer, not a choice
        rest = f"{m['verb']} {rest}"
    elif m.re is _ADOPTED:
        rest = f"{m['verb']} {rest}"
    elif m.re is _DECIDED and m["verb"]:
        if m["verb"] == "went" and not rest.startswith("with"):
            return None
        rest = re.sub(r"^(?:to|on|that|for|with|upon)\s+", "", rest)
    if _NOT_A_DECISION.search(rest.split(" because ")[0].split(" since ")[0][:40]):
        return None  # "we decided not to decide", "we agreed that maybe …"
    return _split_why(_original_span(clause, rest))


def _without_trailing_question(sentence: str) -> str | None:
    """``sentence`` without the question that trails it ("…, was that a good call?"); None
    when all of it is a question."""
    text = sentence.rstrip()
    if not text.endswith("?"):
        return text
    cut = _TRAILING_QUESTION.search(text)
    if cut is None or cut.start() == 0:
        return None
    return text[: cut.start()].rstrip(" ,;")


def _clauses(sentence: str) -> list[str]:
    """The clauses of ``sentence`` that a person may decide in: split before "but / so /
    and / because I…" and at semicolons."""
    parts = (
        re.sub(r"^(?:but|so|and|because)\s+", "", c.strip(), flags=re.I)
        for c in _CLAUSE_SPLIT.split(sentence)
    )
    return [c for c in parts if c]


def open_lines_in(text: str, role: str) -> list[OpenLine]:
    """The commitments, to-dos and open questions ``text`` states."""
    found = []
    for sentence in sentences(text):
        if m := _TODO.match(sentence):
            found.append(OpenLine(_trim(m["rest"]), "todo", _verb_stem(m["rest"])))
            continue
        if role == "assistant":
            continue
        low = spelled_out(sentence)
        if low.endswith("?"):
            undecided = _UNDECIDED.search(low)
            if (_OPEN_QUESTION.match(low) or undecided) and not _REQUEST.search(low):
                about = low[undecided.start() :] if undecided else ""
                found.append(OpenLine(_trim(sentence), "question", about=about))
            continue
        if (undecided := _UNDECIDED.search(low)) and not _REQUEST.search(low[: undecided.start()]):
            found.append(OpenLine(_trim(sentence), "question", about=low[undecided.start() :]))
            continue
        m = _COMMITMENT.match(low) or _OBLIGATION.match(low)
        excluded = _NOT_COMMITTED if m is None or m.re is _COMMITMENT else _NOT_OBLIGED
        if m is None or m["verb"] in excluded or m["verb"].endswith("ly"):
            continue
        if m.re is _OBLIGATION and not _CONCRETE.search(
            sentence[-len(m["rest"]) - 1 :] if m["rest"] else ""
        ):
            continue  # "don't forget to take breaks": advice, not a task
        if _GOING_WITH.match(low):  # "we'll go with the blue logo" is a decision
            continue
        if re.search(r"\b(?:if|unless|when|once)\b", low[: m.start("verb")]):
            continue
        found.append(
            OpenLine(
                _trim(_original_span(sentence, f"{m['verb']}{m['rest']}")),
                "commitment",
                stem(m["verb"]),
            )
        )
    return found


def closes(
    item: OpenLine, text: str, same_speaker: bool, role: str = "user", decided: bool = False
) -> bool:
    """Whether ``text`` (a later statement) resolves the open ``item``: an answer by
    someone else or a decision on it closes a question; a report that it was done closes
    a task. A model's reply closes only what it says it did itself ("I've booked it"): its
    recap of a plan is no report."""
    if role == "assistant" and not _DID_IT.search(spelled_out(text)):
        return False
    wanted = (content_stems(item.about) or content_stems(item.what)) - (
        {item.verb} if item.verb else set()
    )
    if not wanted:
        return False
    for sentence in sentences(text):
        low = spelled_out(sentence)
        have = content_stems(low)
        if item.kind == "question" and decided and item.about and wanted & have:
            return True  # a decision on the choice left open ("should I go?" → "I'll go")
        if len(wanted & have) * 2 < len(wanted):
            continue
        if item.kind == "question":
            if decided and not low.endswith("?"):
                return True
            if not same_speaker and not low.endswith("?") and not _OPEN_QUESTION.match(low):
                return True
            continue
        if low.endswith("?") or re.search(r"\b(?:not|never|will|going to|yet)\b", low):
            continue
        past = _PAST.get(item.verb, "").split()
        if (
            _DONE.search(low)
            or any(re.search(rf"\b{p}\b", low) for p in past)
            or (item.verb and re.search(rf"\b{re.escape(item.verb)}\w*ed\b", low))
        ):
            return True
    return False


#: Where what was decided ends and the rest of a long sentence (a worry, a request) begins.
_DECISION_END: Final = re.compile(
    r",\s*(?:but|and (?:i|we|now)|which|so|can you|could you|though)\b|;|\s(?:but i|and i am|and now i)\b"
    r"|\s(?:can|could) you\b",
    re.I,
)


def _split_why(what: str) -> DecisionLine:
    what = what.strip()
    if end := _DECISION_END.search(what):
        what = what[: end.start()]
    if m := _WHY.search(what):
        return DecisionLine(_trim(what[: m.start()]), _trim(m[1]))
    return DecisionLine(_trim(what), "")


def _original_span(sentence: str, lowered_tail: str) -> str:
    """The end of ``sentence`` as written that ``lowered_tail`` (a lowered, spelled-out
    tail of it) stands for: from where its first words are found (spelled-out
    contractions in between do not move it), else the tail itself."""
    first = " ".join(lowered_tail.split()[:3])
    pos = " ".join(sentence.replace("\u2019", "'").split()).casefold().rfind(first)
    return " ".join(sentence.split())[pos:] if pos >= 0 else lowered_tail


def _verb_stem(rest: str) -> str:
    first = re.match(r"\s*([A-Za-z]+)", rest)
    return stem(first[1].casefold()) if first else ""


def _trim(text: str) -> str:
    return text.strip().strip("\"'").rstrip(" .;:!,").strip()
