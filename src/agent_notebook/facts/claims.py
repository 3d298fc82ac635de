"""Claims read from a sentence: a subject, an attribute and a value, with their polarity,
for the rules that find an update or a contradiction between two statements.

Three shapes are read, each over a sentence case-folded with its contractions spelled out:

* **a value**: "<subject> is / was / will be <value>" or "<subject> moved / changed /
  improved / reached … to <value>", the subject a short noun phrase ("my dog", "the launch",
  "the dashboard API response time, which …"). Kept only when the value is typed (a number,
  a date, a version, a named thing) or the subject names a one-valued attribute (name, age,
  city, deadline, colour…): "my dog is cute" says nothing another value would end.
* **where, who for**: "I live in / moved to / relocated to <place>", "I work at / for /
  joined <employer>": one value at a time.
* **an act or habit**: "<I|we> [never|not|no longer] <verb> <object>" ("we use PostgreSQL
  15", "I have never used Docker", "I like tea"); "switched / migrated / moved from A to B"
  and "replaced A with B" are an update of "use". Wishes and requests ("I want to", "can
  you") claim nothing.

A claim is multi-valued when its attribute holds many values at once (likes, uses, has…)
or its value is an enumeration ("Redis, Kafka and Postgres"): another value does not end it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Final

from ..core.enrich import STOPWORDS
from ..core.lexical import stem
from .text import (
    CALENDAR_WORDS,
    IRREGULAR_VERBS,
    UPDATE_CUE,
    content_stems,
    sentences,
    spelled_out,
    word_set,
)

__all__ = ["Claim", "claims_in", "reported_changes_in", "same_subject", "value_name"]


@dataclass(frozen=True, slots=True)
class Claim:
    #: The possessor ("my", "our", "i", "we"…) or "" and the content stems of the subject.
    owner: str
    subject: frozenset[str]
    #: The last content word of the subject, stemmed: "my dog" and "my cat" differ there.
    head: str
    attribute: str
    value: str
    polarity: bool
    multi: bool
    #: The sentence says it replaces what held before ("now", "moved to", "actually"…).
    update: bool
    #: For "switched from A to B": A, whose claims this one ends.
    replaces: str = ""
    #: The sentence as written.
    sentence: str = ""
    #: A story about the past ("back in 2019 I worked at…"): it ends no current claim.
    historical: bool = False
    #: Said by an assistant of the user it serves ("I've updated your address to…"): the
    #: user's fact, filed under the person who spoke last.
    on_behalf: bool = False
    #: Its subject is "it", the thing just spoken of ("we moved it to the Severn room"):
    #: the reader takes the subject of the latest value said in the turns before.
    refers_back: bool = False

    @property
    def value_stems(self) -> frozenset[str]:
        return content_stems(self.value)


_DET: Final = r"(?:my|our|the|his|her|their|your|its|this|that)"
_OWNERS: Final = frozenset(["my", "our", "his", "her", "their", "your"])
_LEAD: Final = (
    r"^(?:(?:actually|correction|update|so|ok(?:ay)?|oh|well|also|btw|just so you know|quick update|"
    r"fyi|sorry|no|yes|and|but|anyway|turns out|change of plans?|new plan|scratch that|"
    r"on second thought|heads up)\W+)*"
)
_COPULA: Final = re.compile(
    _LEAD + rf"(?P<subj>{_DET}\s+(?:[\w\-./']+\s+){{0,4}}?[\w\-./']+)\s+"
    r"(?P<verb>is|are|was|were|will be|has been|have been|is going to be)\s+"
    r"(?P<neg>not\s+|no longer\s+)?(?:now\s+|still\s+|actually\s+|officially\s+|currently\s+)?"
    r"(?:(?:on|at|in|set (?:to|for)|scheduled (?:for|on)|planned for|due (?:on|by)?)\s+)?(?P<val>\S.*)$"
)
_LABELLED: Final = re.compile(
    r"^(?:my\s+)?(?:new|updated|changed|corrected|current)\s+(?P<subj>(?:[a-z][\w\-']*\s+){0,2}?"
    r"[a-z][\w\-']*)\s*(?::|-|is now|now)\s*(?P<val>\S.*)$"
)
_BARE_COPULA: Final = re.compile(
    _LEAD + r"(?P<subj>(?:[a-z][\w\-']*\s+){0,2}?[a-z][\w\-']*)\s+"
    r"(?P<verb>is|are|was|will be)\s+(?P<neg>not\s+|no longer\s+)?(?:now\s+|still\s+)?"
    r"(?:(?:on|at|set (?:to|for)|scheduled (?:for|on)|due (?:on|by)?)\s+)?(?P<val>\S.*)$"
)
#: A "subject" that is a pronoun, a question word or a filler names nothing to keep.
_NOT_A_SUBJECT: Final = word_set("""it this that there here he she they i we you what who which where when how why
    everything nothing something anything life today tomorrow yesterday tonight now time
    mine yours his hers ours theirs one all each both either neither someone everyone""")
_CHANGE: Final = (
    r"(?:has\s+|have\s+|had\s+|was\s+|were\s+|is\s+|are\s+|got\s+|just\s+|recently\s+|now\s+|"
    r"been\s+|officially\s+|finally\s+)*"
    r"(?P<verb>moved|changed|pushed(?: back| out)?|postponed|rescheduled|delayed|shifted|"
    r"brought forward|bumped|updated|increased|decreased|raised|lowered|dropped|reduced|grown|"
    r"grew|rose|risen|fell|fallen|improved|slipped|gone up|gone down|went up|went down|reached|"
    r"climbed|jumped|expanded|extended)\s+(?:(?:from\s+.{1,30}?\s+)?(?:to|up to|down to|back to|"
    r"until)\s+|(?=\d))(?P<val>\S.*)$"
)
_CHANGED: Final = re.compile(
    _LEAD
    + rf"(?P<subj>(?:{_DET}\s+)?(?:[\w\-./']+\s+){{0,4}}?[\w\-./']+),?\s+(?:which\s+|that\s+)?"
    + _CHANGE
)
#: "…the dashboard API response time, which has improved to 250ms": found from "which"
#: (a search from every position for the subject first would be slow on long messages).
_WHICH_CHANGED: Final = re.compile(r",?\s+(?:which|that)\s+" + _CHANGE)
_WORD_BEFORE: Final = re.compile(r"[\w\-./']+")
_PLACE: Final = re.compile(
    r"\b(?P<who>i|we)\s+(?:have\s+|had\s+|just\s+|recently\s+|finally\s+|now\s+|also\s+)*"
    r"(?P<verb>moved|relocated|live|lived|am living|are living|am based|are based|reside|"
    r"work|worked|am working|are working|joined|started (?:working )?(?:at|for))"
    r"\s+(?:(?:back|out|over|away|down|up)\s+)?(?P<prep>to|in|at|for|from)?\s*(?P<val>[^,;]+)"
)
_SWITCH: Final = re.compile(
    r"\b(?P<who>i|we)\s+(?:have\s+|had\s+|just\s+|recently\s+|finally\s+|now\s+)*"
    r"(?:switched|migrated|moved|changed|upgraded|downgraded|went)\s+from\s+(?P<old>.+?)\s+to\s+"
    r"(?P<val>[^,;]+)|\b(?P<who2>i|we)\s+(?:have\s+|just\s+|recently\s+)*replaced\s+(?P<old2>.+?)"
    r"\s+with\s+(?P<val2>[^,;]+)"
)
_ACT: Final = re.compile(
    r"(?:^|[,;:]\s+|\b(?:and|but|so|because|since|although)\s+)(?P<who>i|we)\s+"
    r"(?P<aux>(?:do|did|does|have|has|had|am|are|was|were|still|also|already|just|really|"
    r"actually|now|always|currently|usually|ever|even)\s+)*"
    r"(?P<neg>never\s+(?:ever\s+)?|not\s+(?:yet\s+|ever\s+|even\s+)?|no longer\s+)?"
    r"(?:(?:actually|really|ever|even|yet|now|already|also|personally|once)\s+)*"
    r"(?P<verb>[a-z]+)\s+(?P<obj>[^,;.!?]+)"
)
#: When an act was done is not what was done: "coffee every morning" is "coffee".
_WHEN: Final = re.compile(
    r"\s+(?:(?:every|each|last|this|next|on|in|at|since|for|all)\s+(?:the\s+)?(?:morning|evening|"
    r"night|day|week|weekend|month|year|spring|summer|autumn|fall|winter|(?:mon|tues|wednes|thurs|"
    r"fri|satur|sun)days?|jan\w*|feb\w*|march|april|may|june|july|aug\w*|sept?\w*|oct\w*|"
    r"nov\w*|dec\w*)|yesterday|today|tonight|tomorrow|recently|lately|\w+ (?:days|weeks|months|"
    r"years) ago)\b.*$"
)
_COUNT: Final = re.compile(
    r"(?<![\w.,$€£%])(?P<n>\d{1,3}(?:,\d{3})+|\d+)(?![\w.,%:/-])\s+(?:(?:new|more|total|"
    r"additional|extra|other|different|[a-z]+al)\s+)?(?P<noun>[a-z]{3,})"
)
_NUMBER: Final = re.compile(r"\d+(?:[.,]\d+)*")
#: A time that puts what the sentence says in the past: a story, not the present.
_PAST_TIME: Final = re.compile(
    r"\b(?:back (?:in|when|then)|in (?:19|20)\d\d|(?:\d+|a few|a couple of|several|many|two|"
    r"three|four|five|ten) years? ago|years ago|when i was|as a (?:kid|child|teenager|student)|"
    r"growing up|used to|at the time|in my (?:twenties|thirties|teens|youth)|before i (?:moved|"
    r"joined|started)|formerly|previously|once upon)\b"
)
#: A sentence that starts as a condition or an imagined case claims nothing.
_HYPOTHETICAL_START: Final = re.compile(
    r"^(?:even )?(?:if|suppose|supposing|imagine|assuming|unless|what if|in case|let us say|"
    r"say)\b"
)
#: Before a claim, a word that makes it possible rather than so.
_HYPOTHETICAL_BEFORE: Final = re.compile(r"\b(?:if|would|might|could|may|maybe|perhaps|whether)\b")
#: Someone else's words reported: "she said the office moved".
_REPORTED: Final = re.compile(
    r"\b(?!i\b|we\b)[a-z]+\s+(?:said|says|told (?:me|us|him|her|them)|mentioned|claims?|"
    r"claimed|thinks|thought|heard|reckons?|believes?|reported)\b"
)
#: "We moved it to the Severn room", "it's now at 3pm": a new value of the thing just named.
_IT_CHANGED: Final = re.compile(
    _LEAD + r"(?:(?:we|i|they)\s+(?:have\s+|just\s+|now\s+)*(?:moved|changed|pushed(?: back)?|"
    r"rescheduled|postponed|switched|shifted|bumped|brought forward)\s+it\s+(?:back\s+)?|"
    r"it\s+(?:has\s+)?(?:moved|changed|been moved|been changed|is now|was moved)\s+)"
    r"(?:to|until|on|at)?\s*(?P<val>[^,;]+)"
)
#: "I joined Strava as a premium member": a customer, not an employee.
_NOT_EMPLOYED: Final = re.compile(
    r"\bas an? (?:[a-z]+\s+){0,2}(?:member|subscriber|customer|user|fan|volunteer|guest|patron|"
    r"tester|client|supporter)\b"
)
#: "Done: I've updated your address to 48 Elm Road": an assistant's report of the change.
_REPORTED_CHANGE: Final = re.compile(
    r"\bi\s+(?:have\s+|just\s+|now\s+)*(?:updated|changed|set|corrected|moved|switched)\s+"
    r"your\s+(?P<subj>(?:[\w\-']+\s+){0,3}?[\w\-']+)\s+(?:to|as)\s+(?P<val>[^,;!?]+)"
)
_FIRST_PERSON_WORD: Final = re.compile(r"\b(?:i|we|my|our)\b")
_TIME_UNITS: Final = CALENDAR_WORDS | word_set(
    """seconds second minutes minute hours hour days day weeks week months month years year
    times percent ms am pm jan feb mar apr jun jul aug sep sept oct nov dec"""
)
_STOPPED: Final = re.compile(r"(?P<verb>[a-z]+ing)\s+(?P<obj>.+)")
#: "I am (not) a vegetarian", "we are no longer a startup": what one is, many at once.
_IDENTITY: Final = re.compile(
    r"(?:^|[,;:]\s+|\b(?:and|but|so|because|since)\s+)(?P<who>i|we)\s+(?:am|are)\s+"
    r"(?P<neg>not\s+|no longer\s+)?(?:still\s+|actually\s+|now\s+)?(?:a|an)\s+(?P<val>[^,;.!?]+)"
)
#: Verbs that say nothing of what is or was: wishes, requests, plans, opinions, thinking.
_NOT_A_CLAIM: Final = word_set("""want wanted wanting need needed needing would will shall should could can may might must
    try tried trying plan planned planning hope hoped hoping wish wished think thought thinking
    believe guess suppose wonder wondering feel felt am are was were be been being is have had
    has do did does going go get got gotten looking look trying let make sure understand know
    knew see saw mean meant say said ask asked tell told decided agreed chose prefer""")
_MULTI_VERBS: Final = frozenset(
    stem(w)
    for w in word_set("""like love enjoy adore prefer use have own speak play know visit eat drink read
    watch follow support write build run collect study learn keep work""")
)
_ONE_VALUED: Final = frozenset(
    stem(w)
    for w in word_set("""name age birthday address email phone number city country hometown job title role
    salary deadline date day launch release time budget price cost limit quota target status
    owner version color colour size weight height rate goal plan capacity total count score
    coverage latency duration estimate location timezone manager lead favorite favourite
    password port host""")
)
_TYPED: Final = re.compile(
    r"\d|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|\b(?:monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday|today|tomorrow|next|week|month)\b"
)
_ENUMERATION: Final = re.compile(r",\s*\w+.*(?:,|\band\b|\bor\b)|\b(?:and|or|as well as|both)\b")
_CLAUSE_END: Final = re.compile(
    # a comma of thousands ("$50,000") and the colon of a time ("10:30") are in the value
    r"\s*(?:,(?!\d{3}\b)|;|:(?!\d{2}\b)|\(|\s-\s|\s(?:but|because|since|so|which|who|where|when|"
    r"while|after|before|although|though|if|and i|and we|and it|and the|, and)\s)"
)
_VERSION: Final = re.compile(r"\s*\b(?:version\s+|v)?\d+(?:\.\d+)*[a-z]?\b")
_QUESTION_START: Final = re.compile(
    r"^(?:do|does|did|is|are|was|were|can|could|would|should|will|have|has|how|what|why|when|"
    r"where|which|who)\b"
)


def claims_in(text: str) -> list[Claim]:
    """The claims of ``text`` (prose, code removed), in order. A question, a condition or
    an imagined case claims nothing, nor what someone else is reported to have said; a
    story about the past is kept as such (``historical``)."""
    found: list[Claim] = []
    for sentence in sentences(text):
        low = spelled_out(sentence).rstrip(" .!")
        if low.endswith("?") or _QUESTION_START.match(low) or _HYPOTHETICAL_START.match(low):
            continue
        update = bool(UPDATE_CUE.search(low))
        claims = [
            *_value_claims(low, sentence, update),
            *_place_claims(low, sentence),
            *_act_claims(low, sentence, update),
            *_count_claims(low, sentence, update),
        ]
        if claims and _PAST_TIME.search(low) and not re.search(r"\b(?:now|these days)\b", low):
            claims = [replace(c, historical=True) for c in claims]
        found += claims
    return found


def reported_changes_in(text: str) -> list[Claim]:
    """What an assistant reports having changed for the user it serves ("I've updated your
    address to 48 Elm Road"): the user's value claims, said as updates."""
    found = []
    for sentence in sentences(text):
        low = spelled_out(sentence).rstrip(" .!")
        for m in _REPORTED_CHANGE.finditer(low):
            subject = _noun_phrase(m["subj"])
            value = _first_clause(m["val"])
            if subject is None or not value:
                continue
            _, stems, head = subject
            found.append(
                Claim(
                    "my",
                    stems,
                    head,
                    "value",
                    value,
                    True,
                    multi=False,
                    update=True,
                    sentence=sentence,
                    on_behalf=True,
                )
            )
    return found


def _said_so(low: str, start: int) -> bool:
    """Whether the claim found at ``start`` of ``low`` is the speaker's own and so: no
    condition, possibility or someone else's report before it."""
    before = low[:start]
    return not (_HYPOTHETICAL_BEFORE.search(before) or _REPORTED.search(before))


def same_subject(a: Claim, b: Claim) -> bool:
    """The same thing: the same head word and owner (when both name one), and one subject's
    words all within the other's ("response time" and "the dashboard API response time")."""
    if a.head != b.head or not a.head:
        return False
    if a.owner and b.owner and a.owner != b.owner:
        return False
    return a.subject <= b.subject or b.subject <= a.subject


def value_name(value: str) -> str:
    """What the value names, its version left out: "postgresql 16" → "postgresql"."""
    return " ".join(_VERSION.sub(" ", value).split()) or value


def _value_claims(low: str, sentence: str, update: bool) -> list[Claim]:
    if labelled := _labelled_value(low, sentence) or _value_of_it(low, sentence):
        return labelled
    m = _COPULA.match(low) or _CHANGED.match(low) or _bare_copula(low)
    subject_text = m["subj"] if m else ""
    if m is None and (m := _WHICH_CHANGED.search(low)) is not None:
        subject_text = " ".join(_WORD_BEFORE.findall(low[: m.start()])[-5:])
    if m is None:
        return []
    if _REPORTED.search(low, 0, m.start("val")) or _HYPOTHETICAL_BEFORE.search(
        low, 0, m.start("verb")
    ):
        return []
    subject = _noun_phrase(subject_text)
    if subject is None:
        return []
    owner, stems, head = subject
    value = _first_clause(m["val"])
    if not value or value.startswith(
        ("that ", "to ", "a bit", "very ", "so ", "too ", "why ", "how ")
    ):
        return []
    changed = m.re not in (_COPULA, _BARE_COPULA)
    if not (_TYPED.search(value) or _named(sentence, value) or stems & _ONE_VALUED):
        return []
    negated = bool(m.groupdict().get("neg"))
    return [
        Claim(
            owner,
            stems,
            head,
            "value",
            value,
            not negated,
            multi=bool(_ENUMERATION.search(value)) and not _TYPED.search(value),
            update=update or changed,
            sentence=sentence,
        )
    ]


def _value_of_it(low: str, sentence: str) -> list[Claim]:
    """ "We moved it to the Severn room": a value whose subject the turns before give."""
    m = _IT_CHANGED.match(low)
    if m is None or _REPORTED.search(low, 0, m.start("val")):
        return []
    value = _first_clause(m["val"])
    if not value or not (_TYPED.search(value) or _named(sentence, value)):
        return []
    return [
        Claim(
            "",
            frozenset(),
            "",
            "value",
            value,
            True,
            multi=False,
            update=True,
            sentence=sentence,
            refers_back=True,
        )
    ]


def _labelled_value(low: str, sentence: str) -> list[Claim]:
    """ "New number: 555-0199", "new address - 48 Elm Road": the speaker's new value."""
    m = _LABELLED.match(low)
    if m is None or (subject := _noun_phrase(m["subj"])) is None:
        return []
    value = _first_clause(m["val"])
    _, stems, head = subject
    if not value or not (_TYPED.search(value) or _named(sentence, value) or stems & _ONE_VALUED):
        return []
    return [
        Claim("my", stems, head, "value", value, True, multi=False, update=True, sentence=sentence)
    ]


def _bare_copula(low: str) -> re.Match[str] | None:
    """ "Door code is 4471", "kickoff is Wednesday at 10": a subject with no determiner, kept
    only when it names a one-valued thing or the value is typed (a number, a date)."""
    m = _BARE_COPULA.match(low)
    if m is None or set(m["subj"].split()) & _NOT_A_SUBJECT:
        return None
    value = m["val"]
    if not (_TYPED.search(value) or content_stems(m["subj"]) & _ONE_VALUED):
        return None
    return m


def _place_claims(low: str, sentence: str) -> list[Claim]:
    found = []
    for m in _PLACE.finditer(low):
        verb = m["verb"]
        if not _said_so(low, m.start()):
            continue
        if verb in ("moved", "relocated") and m["prep"] != "to":
            continue  # "I moved my savings to Chase": not where one lives
        if m["prep"] == "from" or (
            verb.startswith(
                ("live", "lived", "am living", "are living", "reside", "am based", "are based")
            )
            and m["prep"] != "in"
        ):
            continue
        attribute = (
            "employer"
            if re.match(r"work|worked|am working|are working|joined|started", verb)
            else "home"
        )
        if attribute == "employer" and (
            m["prep"] not in ("at", "for", None) or _NOT_EMPLOYED.search(m["val"])
        ):
            continue
        value = _WHEN.sub("", _first_clause(re.split(r"\s+as\s+", m["val"])[0])).strip()
        if not value or not _named(sentence, value):
            continue
        moved = verb in ("moved", "relocated", "joined") or verb.startswith("started")
        found.append(
            Claim(
                m["who"],
                frozenset(),
                m["who"],
                attribute,
                value,
                True,
                multi=False,
                update=moved or bool(UPDATE_CUE.search(low)),
                sentence=sentence,
            )
        )
    return found


def _act_claims(low: str, sentence: str, update: bool) -> list[Claim]:
    found = []
    if m := _SWITCH.search(low):
        old = m["old"] or m["old2"]
        value = _first_clause(m["val"] or m["val2"])
        who = m["who"] or m["who2"]
        if value:
            found.append(
                Claim(
                    who,
                    frozenset(),
                    who,
                    stem("use"),
                    value,
                    True,
                    multi=False,
                    update=True,
                    replaces=value_name(_first_clause(old)),
                    sentence=sentence,
                )
            )
        return found
    if m := _IDENTITY.search(low):
        value = _first_clause(m["val"])
        if content_stems(value):
            negated = bool(m["neg"])
            found.append(
                Claim(
                    m["who"],
                    frozenset(),
                    m["who"],
                    "identity",
                    value,
                    not negated,
                    multi=True,
                    update=update or "no longer" in (m["neg"] or ""),
                    sentence=sentence,
                )
            )
    for m in _ACT.finditer(low):
        verb, obj, neg = m["verb"], m["obj"], (m["neg"] or "").strip()
        if not _said_so(low, m.start("who")):
            continue
        if verb == "been" and obj.startswith("to "):  # "I have never been to Japan"
            verb = "go"
        elif (ended := _STOPPED.match(obj)) and verb in ("stopped", "quit", "started", "began"):
            # "I stopped drinking coffee": no longer drinks it; "started": now does.
            neg = "" if verb in ("started", "began") else "no longer"
            verb, obj = ended["verb"], ended["obj"]
            update = True
        elif verb in _NOT_A_CLAIM or verb.endswith("ly") or len(verb) < 3:
            continue
        aux = m["aux"] or ""
        if "will" in aux or "would" in aux:
            continue
        if neg.startswith("not") and re.search(r"\byet\b", low):
            continue  # "I have not deployed it yet" is a thread, not a denial
        obj = _WHEN.sub("", _first_clause(obj)).strip()
        obj = re.sub(r"^(?:to|with|on|in|at|for|about|of)\s+", "", obj)
        if not content_stems(obj):
            continue
        verb_stem = stem(IRREGULAR_VERBS.get(verb, verb))
        found.append(
            Claim(
                m["who"],
                frozenset(),
                m["who"],
                verb_stem,
                obj,
                not neg,
                multi=verb_stem in _MULTI_VERBS or bool(_ENUMERATION.search(obj)),
                update=update or neg.startswith("no longer"),
                sentence=sentence,
            )
        )
    return found


def _count_claims(low: str, sentence: str, update: bool) -> list[Claim]:
    """ "I have 8 cards", "now I have a total of 10 cards": a count of a thing the speaker
    has or did. Only a count said with an update cue ends another (:mod:`.relate`)."""
    if not _FIRST_PERSON_WORD.search(low):
        return []
    context = content_stems(_NUMBER.sub(" ", low))
    found = []
    for m in _COUNT.finditer(low):
        noun = m["noun"]
        if noun in STOPWORDS or noun in _TIME_UNITS:
            continue
        found.append(
            Claim(
                "i",
                context,
                stem(noun),
                "count",
                m["n"].replace(",", ""),
                True,
                multi=False,
                update=update,
                sentence=sentence,
            )
        )
    return found


def _noun_phrase(text: str) -> tuple[str, frozenset[str], str] | None:
    words = text.split()
    owner = words[0] if words and words[0] in _OWNERS else ""
    stems = content_stems(" ".join(w for w in words if w not in _OWNERS))
    stems -= {"date", "day"} if len(stems) > 1 else set()
    if not stems:
        return None
    ordered = [stem(w) for w in re.findall(r"[^\W_]+", text) if stem(w) in stems]
    if not ordered:
        return None
    return owner, frozenset(stems), ordered[-1]


def _first_clause(value: str) -> str:
    cut = _CLAUSE_END.search(value)
    value = value[: cut.start()] if cut else value
    return value.strip().rstrip(" .!;:")[:80]


def _named(sentence: str, value: str) -> bool:
    """Whether ``value`` (lowered) is written with a capital in ``sentence``: a named thing."""
    first = value.split()[0] if value.split() else ""
    pos = sentence.casefold().find(value)
    if pos < 0 or not first:
        return False
    span = sentence[pos : pos + len(value)]
    return any(w[:1].isupper() for w in span.split() if w.casefold() not in ("i",))
