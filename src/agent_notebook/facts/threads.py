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
from .text import CALENDAR_WORDS, content_stems, sentences, spelled_out, word_set

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
    r"actually|on second thought|no wait|change of plans?|update|agreed|also|and|plus|perfect|"
    r"(?:hey|hi|hello)(?: [a-z]+)?)"
    r"\W+)*"
)
#: A feeling said before what was done: "I'm kinda frustrated that I had to cut…", "I'm
#: stressed about declining that contract…". What follows is still reported as done.
_FEELING: Final = (
    r"(?:(?:i|we)\s+(?:am|are|was|were|feel|felt)\s+(?:kinda\s+|kind of\s+|a bit\s+|a little\s+|"
    r"so\s+|really\s+|very\s+|still\s+)*(?:stressed|worried|frustrated|nervous|anxious|unsure|"
    r"happy|glad|proud|relieved|sad|upset|excited|torn)\s+(?:about|that|over|with)\s+)"
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
    r"get|take|hold|invite|buy|hire|choose|host|meet|focus on|aim for|go for|try|give it a try)"
    r"(?P<rest>\s+.+|\W*)$"
)
#: "I approved Ashlee's request", "I hired Stephanie's agency", "I'm prioritizing the script
#: over scouting": a choice made, said by what was done.
_ADOPTED: Final = re.compile(
    _LEAD + _FEELING + r"?(?:i|we)\s+(?:have\s+|had\s+|just\s+|finally\s+|also\s+|now\s+)*"
    r"(?:had to\s+|decided to\s+)?"
    r"(?P<verb>approved|hired|declined|rejected|turned down|signed up for|committed to|"
    r"switched to|shifted (?:my |our )?focus (?:from [^,]+ )?to|am prioriti[sz]ing|are prioriti[sz]ing|"
    r"prioriti[sz]ed|allocated|replaced|rescheduled|cancell?ed|shut down|cut|"
    r"(?P<repeat>added|introduced|implemented|set up|scheduled|blocked out|set aside))\s+(?P<rest>\S.*)$"
)
#: The same choices named by what was done, after a feeling: "I'm stressed about declining
#: that contract", "worried that replacing my morning scroll with journaling since April…",
#: "debating if I made the right call choosing to train Michele". Kept when the choice points
#: back ("that meeting") or is dated ("since April 12"): "worried about hiring someone" is
#: a choice still to make.
_CHOICE_MADE: Final = re.compile(
    _LEAD + r"(?:" + _FEELING + r"|.*\bmade the right (?:call|choice|decision)\s+(?:in\s+|by\s+)?)"
    r"(?P<rest>(?:declining|rejecting|turning down|rescheduling|replacing|choosing|hiring|"
    r"approving|cancell?ing|allocating|switching|shifting|cutting)\s+\S.*)$"
)
_POINTS_BACK: Final = re.compile(
    r"\b(?:that|those|since|last|ago|yesterday|earlier)\b|\bon (?:\w+ )?\d|\d{1,2}/\d{1,2}"
)
#: "I'm gonna stick with Excel", "I think I'll go with training Michele", "I'm also going
#: to keep using the spreadsheet": what is kept or taken, hedged or not.
_KEEPING: Final = re.compile(
    _LEAD + r"(?:i|we)\s+(?:think\s+(?:i|we)\s+)?(?:will|(?:am|are)\s+(?:also\s+|still\s+)?"
    r"(?:going to|gonna))\s+(?:just\s+|probably\s+|definitely\s+|also\s+|still\s+)*"
    r"(?:go with|stick with|stick to|keep using|continue using|stay with|switch to)\s+"
    r"(?P<rest>(?!(?:it|this|that|the|your|our|my) plan\b|it\b|this\b|that\b)\S.*)$"
    r"|" + _LEAD + r"(?:i|we)\s+think\s+(?:i|we)\s+will\s+(?:just\s+|probably\s+|definitely\s+)?"
    r"(?P<also>(?:add|go to|start with|take|try|book|pick|choose|look into|focus on|aim for|"
    r"go for)\s+\S.*)$"
)
#: A commitment to something done again and again ("I'll hold those weekly check-ins", "I'll
#: share the receipts with her regularly", "setting aside Fridays for email"): a plan
#: decided, not a task that will one day be reported done.
_RECURRING: Final = re.compile(
    r"\b(?:daily|weekly|monthly|fortnightly|yearly|annually|nightly|regular|regularly|every|"
    r"each (?:day|week|month|morning|evening|night)|(?:mon|tues|wednes|thurs|fri|satur|sun)days|"
    r"weekends)\b"
)
#: Agreement that names what is agreed: "Next Friday works", "talking to her first makes the
#: most sense", "a monthly slot is perfect", "cooking at home more sounds doable". What is
#: agreed is a plan item (an act, "-ing") or a time; "that works", "this plan sounds good"
#: and "your store looks great" name nothing chosen.
_NAMED_AGREEMENT: Final = re.compile(
    _LEAD + r"(?:sounds (?:good|great|perfect)\W+|i think\s+)?"
    r"(?P<what>(?:[a-z]+ing|(?:next|this|every|on)\s+(?:[a-z]+day|week(?:end)?|month)|[a-z]+day|"
    r"(?:a|one)\s+(?:weekly|monthly|daily|sunday|saturday|regular)|(?:having|a set) time)"
    r"\b[^;:!?]{0,140}?)\s+"
    r"(?:(?:sounds|seems)\s+(?:really\s+|very\s+|totally\s+)?(?:doable|smart|perfect|"
    r"like (?:a|the) (?:good |great |best )?(?:plan|way to go))|works(?:\s+(?:for (?:me|us)|"
    r"perfectly|great|well))?|makes (?:the most |more |total |perfect |a lot of )?sense|"
    r"is perfect)(?:\s+(?:for (?:me|us)|to me|too|then))?\W*$"
)
_NOT_A_PLAN_ITEM: Final = word_set("""nothing something anything everything thing morning evening
    building feeling being during bring string king ring""")
#: Where a question starts that trails a statement ("…, can you help me…?").
_TRAILING_QUESTION: Final = re.compile(
    r"(?:^|[,;]\s*|\s)(?:but\s+|so\s+|and\s+)?(?:can you|could you|would you|was (?:that|this|it)|"
    r"is (?:that|this|it)|how (?:can|do|should|could|would|will)|what (?:are|is|should|do|would|can)|"
    r"will (?:this|that|it)|should i|am i|do you|any (?:tips|ideas|advice|thoughts)|"
    r"i(?:'m| am) (?:wondering|not sure|unsure)|i was wondering|does (?:that|this))\b",
    re.I,
)
_CLAUSE_SPLIT: Final = re.compile(
    r"\s*;\s*|,?\s+(?=(?:but|so|and|because)\s+(?:i|we)\b)"
    r"|,\s+(?=(?:i|we)\s+(?:have\s+|had\s+|just\s+|also\s+)*[a-z]+ed\b)",
    re.I,
)
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
    _LEAD
    + r"(?:i|we)\s+(?:think\s+(?:i|we)\s+)?(?:will|shall|(?:am|are)\s+(?:also\s+|definitely\s+)?"
    r"(?:going to|gonna)|promise to|commit to)\s+"
    r"(?:(?:also|then|first|definitely|still|just)\s+)*(?:make sure to\s+|make sure i\s+)?"
    r"(?:(?:also|then|first|definitely|still|just)\s+)*(?P<verb>[a-z]+)\b(?P<rest>.*)$"
)
_GERUND: Final = re.compile(r"\s+[a-z]+ing\b")
#: A promise that names no task: "I'll do my best", "we'll get through this", "I'm gonna
#: make it happen", "I'll stick to this plan", "I'll keep everyone updated"; or a habit
#: stepped up rather than a task ("I'm going to do more ads").
_VAGUE_PROMISE: Final = re.compile(
    r"^(?:make it\b|get through|do (?:my|our) (?:very )?best|stick up for|be there|give up|"
    r"[a-z]+ more\b|"
    r"stick to (?:it|this|that|the|your|my|our) plan|stick to (?:it|this|that)\b|"
    r"follow (?:it|this|that|through|the plan|your plan)\b|"
    r"keep (?:everyone|you|them|him|her|us|everybody) (?:updated|posted|informed|in the loop))"
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
    r"should (?:i|we) (?!be\b)[a-z]+|(?:i|we) (?:am|are) (?:still )?(?:(?:considering|debating)(?= [a-z])|"
    r"torn between|thinking (?:of|about) [a-z]+ing)|wondering (?:if|whether) (?:i|we) should)\b"
)
#: The word before a choice that makes it a clause of something else: "things I should
#: consider", "the contract I'm considering" speak of a choice, they do not leave one open.
_UNDECIDED_AFTER: Final = word_set("""so and but or if whether wondering now then still also really
    honestly seriously maybe perhaps ok okay yes yeah hmm well""")
#: "Thinking of going" is a plan until a doubt is said with it ("…, but I'm not sure").
_HEDGE: Final = re.compile(
    r"\b(?:not sure|unsure|or not|undecided|can not decide|torn|on the fence|what do you think)\b"
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
        if (m := _NAMED_AGREEMENT.match(spelled_out(sentence))) and (
            m["what"].split()[0] not in _NOT_A_PLAN_ITEM
        ):
            span = _original_span(sentence, m["what"]).split()[: len(m["what"].split())]
            found.append(DecisionLine(" ".join(span), ""))
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
        or _CHOICE_MADE.match(low)
    )
    if m is None:
        return _recurring_commitment(clause, low)
    part = next(
        g for g in ("rest", "also", "picked") if m.re.groupindex.get(g) and m[g] is not None
    )
    start = m.start("verb") if m.re is _LETS else m.start(part)  # "let's try X" is a choice
    if m.re is not _CHOICE_MADE and _NOT_A_DECISION.search(low[:start]):
        return None
    rest = m[part]
    if m.re is _LETS:
        if m["verb"] == "keep" and re.match(r"\s*[a-z]+(?:ing|in')(?:\W|$)", rest):
            return None  # "let's keep going", "let's keep movin' on": a cheer, not a choice
        if m["verb"] == "try" and re.match(r"\s*(?:to|and|our|my|your)\b|\W*$", rest):
            return None  # "let's try to stay positive", "let's try our best"
        rest = f"{m['verb']}{rest}"
    elif m.re is _ADOPTED:
        if m.groupdict().get("repeat") and not _RECURRING.search(rest):
            return None  # "I added a plugin" is no plan; "I added buffer slots daily" is
        rest = f"{m['verb']} {rest}"
    elif m.re is _CHOICE_MADE and not (_POINTS_BACK.search(rest) or "made the right" in low):
        return None  # "worried about hiring someone": still to choose
    elif m.re is _DECIDED and m["verb"]:
        if m["verb"] == "went" and not rest.startswith("with"):
            return None
        rest = re.sub(r"^(?:to|on|that|for|with|upon)\s+", "", rest)
    said = m[part] if m.re is _LETS else rest  # "let's try X": the verb is the choice
    if _NOT_A_DECISION.search(said.split(" because ")[0].split(" since ")[0][:40]):
        return None  # "we decided not to decide", "we agreed that maybe …"
    return _split_why(_original_span(clause, rest.strip()))


def _recurring_commitment(clause: str, low: str) -> DecisionLine | None:
    """A commitment to something done again and again ("I'll hold those weekly check-ins"):
    a plan decided (see :func:`_is_recurring`)."""
    m = _COMMITMENT.match(low)
    if m is None or not _is_recurring(m):
        return None
    if _NOT_A_DECISION.search(low[: m.start("verb")]):
        return None
    return _split_why(_original_span(clause, f"{m['verb']}{m['rest']}"))


def _is_recurring(m: re.Match[str]) -> bool:
    """Whether the commitment ``m`` (of :data:`_COMMITMENT`) is to a practice, done again
    and again, rather than a task that is once done."""
    return m["verb"] not in _NOT_COMMITTED and bool(_RECURRING.search(m["rest"]))


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
            undecided = _undecided(low)
            if (_OPEN_QUESTION.match(low) or undecided) and not _REQUEST.search(low):
                about = _choice_about(low, undecided) if undecided else ""
                found.append(OpenLine(_trim(sentence), "question", about=about))
            continue
        if (undecided := _undecided(low)) and not _REQUEST.search(low[: undecided.start()]):
            found.append(OpenLine(_trim(sentence), "question", about=_choice_about(low, undecided)))
            continue
        m = _COMMITMENT.match(low) or _OBLIGATION.match(low)
        excluded = _NOT_COMMITTED if m is None or m.re is _COMMITMENT else _NOT_OBLIGED
        if m is None or m["verb"] in excluded or m["verb"].endswith("ly"):
            continue
        if _VAGUE_PROMISE.match(f"{m['verb']}{m['rest']}") or _KEEPING.match(low):
            continue  # "I'll do my best"; "I think I'll go with X" is a decision
        if m.re is _COMMITMENT and (
            _is_recurring(m) or (m["verb"] in ("start", "begin") and _GERUND.match(m["rest"]))
        ):
            continue  # "I'll hold weekly check-ins", "I'll start tracking…": a practice
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


def _undecided(low: str) -> re.Match[str] | None:
    """Where ``low`` leaves a choice of the speaker's open, if it does: not in a relative
    clause ("the things I should consider"), not a doubt about a choice made ("debating if
    I made the right call"), not a plan said without doubt ("thinking of going")."""
    for m in _UNDECIDED.finditer(low):
        before = low[: m.start()].split()
        if m[0].startswith(("i ", "we ", "should")) and before:
            word = before[-1].strip(",;:")
            if not before[-1].endswith((",", ";", ":")) and word not in _UNDECIDED_AFTER:
                continue
        after = low[m.end() :]
        if "debating" in m[0] and re.match(
            r"\s*(?:if|whether) (?:i|we) (?:made|did|was|were)\b", after
        ):
            continue
        if "thinking" in m[0] and not _HEDGE.search(after):
            continue
        return m
    return None


_NAME: Final = re.compile(r"(?<=[a-z,;]\s)[A-Z][\w\-]*")


def _names(text: str) -> frozenset[str]:
    """The content stems of the names inside ``text`` (capitalized words that do not start
    a sentence), weekdays and months aside."""
    return content_stems(
        " ".join(w for w in _NAME.findall(text) if w.casefold() not in CALENDAR_WORDS)
    )


def _choice_about(low: str, undecided: re.Match[str]) -> str:
    """What the choice left open at ``undecided`` is about: the words after its verb
    ("other payment methods" of "should I consider other payment methods?"), so that a
    later "I'm considering…" on another matter does not settle it."""
    return low[undecided.end() :]


def closes(
    item: OpenLine,
    text: str,
    same_speaker: bool,
    role: str = "user",
    decided: bool = False,
    recent: bool = True,
) -> bool:
    """Whether ``text`` (a later statement) resolves the open ``item``: an answer by
    someone else or a decision on it closes a question; a report that it was done closes
    a task. A model's reply closes only what it says it did itself ("I've booked it"): its
    recap of a plan is no report. A decision that shares a single word with a question
    settles it when ``recent`` (said just after it: "should I go?" → "I'll go to the
    event") or when that word is a name the question holds ("the Mint app"); else half the
    question's words must be met."""
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
        if (
            item.kind == "question"
            and decided
            and item.about
            and wanted & have
            and (recent or _names(item.what) & have)
            and decisions_in(sentence, role)
        ):
            return True  # a decision on the choice left open ("should I go?" → "I'll go")
        if len(wanted & have) * 2 < len(wanted):
            continue
        if item.kind == "question":
            if decided and not low.endswith("?") and decisions_in(sentence, role):
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
