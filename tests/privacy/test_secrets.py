"""Secrets in what is recorded (``privacy.secrets``): each detector, its near misses, and
masking or refusing on a real notebook, whose files then hold no secret."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_notebook import Notebook
from agent_notebook.config import NotebookConfig, PrivacySettings, write_config
from agent_notebook.errors import InvalidInput
from agent_notebook.privacy.audit import AUDIT_WHO
from agent_notebook.privacy.secrets import mask, mask_value

# Made-up keys in each vendor's format (none of them is a real credential).
OPENAI = "sk-proj-Ab3dEfGh1jKlMnOpQrStUvWxYz0123456789_-abcDEFgh"
OPENAI_LEGACY = "sk-" + "T3BlbkFJ" + "aB1cD2eF3gH4iJ5kL6mN7oP8qR9sT0uVwXyZ12345678"
ANTHROPIC = "sk-ant-api03-" + "Qw9eRt7yUi5oPa3sDf1gHj" * 4 + "AA"
AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
GITHUB_PAT = "github_pat_11ABCDEFG0123456789_" + "abcdefghijKLMNOPQRST0123456789" * 2
GITHUB_OAUTH = "gho_" + "Z9y8X7w6V5u4T3s2R1q0" * 2
SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
GOOGLE = "AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFuYSJ9"
    ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
BEARER = "c2VjcmV0LXRva2VuLTEyMzQ1Njc4"
PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACDzq8fake0fake0fake0fake0fake0fake0fake0fakeAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----"
)

POSITIVES = [
    ("openai key", f"my key is {OPENAI}, keep it", OPENAI),
    ("openai key", f"export OPENAI_API_KEY={OPENAI_LEGACY}", OPENAI_LEGACY),
    ("anthropic key", f"client = Anthropic(api_key='{ANTHROPIC}')", ANTHROPIC),
    ("aws access key id", f"the id is {AWS_ID}.", AWS_ID),
    ("aws secret key", f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    ("aws secret key", f'"AWS_SECRET_ACCESS_KEY": "{AWS_SECRET}"', AWS_SECRET),
    ("github token", f"git clone https://{GITHUB}@github.com/ana/trip", GITHUB),
    ("github token", f"token {GITHUB_PAT}", GITHUB_PAT),
    ("github token", f"oauth: {GITHUB_OAUTH}", GITHUB_OAUTH),
    ("slack token", f"SLACK={SLACK}", SLACK),
    ("google api key", f"https://maps.googleapis.com/?key={GOOGLE}&q=Lyon", GOOGLE),
    ("jwt", f"the session cookie was {JWT}", JWT),
    ("bearer token", f"curl -H 'Authorization: Bearer {BEARER}' https://api", BEARER),
    ("private key", f"here is my key:\n{PEM}\nuse it", PEM),
    (
        "private key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n(cut)",
        "MIIEowIBAAKCAQEA7",
    ),
    ("password", "login with password=hunter2! tomorrow", "hunter2!"),
    ("password", "DB_PASSWORD: 'correct horse battery'", "correct horse battery"),
    ("credential", 'settings: {"api_key": "x7Kp2mQ9"}', "x7Kp2mQ9"),
    ("credential", "client_secret = 9f8e7d6c5b4a", "9f8e7d6c5b4a"),
]

NEGATIVES = [
    "Book the train to Lyon for 7 June; call Ana at 10am about the hotel.",
    "Fixed in commit 3f786850e387550fdab836ed7e6dc881de23001b (see 3f78685).",
    "request id 123e4567-e89b-12d3-a456-426614174000 failed",
    "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "We use sk-learn-style pipelines and ask-me-anything threads.",
    "the password: please reset it on Monday",
    "Forgot your password? Use the reset token link.",
    "max_tokens=512 and token_count: 1200, tokens: 4096",
    "api_key=os.environ['OPENAI_API_KEY'] and password = getpass()",
    "secret: $MY_SECRET, password=<your password>, token: {{ token }}, pwd=***",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkq\n-----END CERTIFICATE-----",
    "The bearer of bad news; Authorization: pending review.",
    "AKIA is not a key; neither is AKIAshort nor eyJhbGciOiJIUzI1NiJ9 alone.",
    "xoxb-workspace-name and ghp_short and AIzaTooShort",
    "sk-1234 is a SKU; s3cr3t is a word in a list",
]


@pytest.mark.parametrize(("kind", "text", "secret"), POSITIVES)
def test_each_detector_masks_its_secret(kind: str, text: str, secret: str) -> None:
    masked, found = mask(text)
    assert secret not in masked
    assert f"[secret:{kind} masked]" in masked
    assert [f.kind for f in found] == [kind]
    assert mask(masked) == (masked, [])  # a placeholder is not masked again


@pytest.mark.parametrize("text", NEGATIVES)
def test_near_misses_are_left_alone(text: str) -> None:
    assert mask(text) == (text, [])


def test_only_the_secret_goes_and_the_kind_stays() -> None:
    text = f"keys: {OPENAI} and {AWS_ID}; password=hunter2 done"
    masked, found = mask(text)
    assert masked == (
        "keys: [secret:openai key masked] and [secret:aws access key id masked]; "
        "password=[secret:password masked] done"
    )
    assert [text[f.start : f.end] for f in found] == [OPENAI, AWS_ID, "hunter2"]


def test_structured_values_mask_strings_and_labelled_keys() -> None:
    value = {"headers": {"Authorization": "token-abc"}, "password": "hunter2", "n": [OPENAI, 3]}
    masked, kinds = mask_value(value)
    assert masked == {
        "headers": {"Authorization": "[secret:credential masked]"},
        "password": "[secret:password masked]",
        "n": ["[secret:openai key masked]", 3],
    }
    assert sorted(kinds) == ["credential", "openai key", "password"]
    assert mask_value({"query": "Lyon", "limit": 3}) == ({"query": "Lyon", "limit": 3}, [])


# -- on a real notebook -------------------------------------------------------------------


def home_with(tmp_path: Path, kind: str, secrets: str) -> Path:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    privacy = PrivacySettings.model_validate({"secrets": secrets})
    write_config(home, NotebookConfig(backend=kind, privacy=privacy))
    return home


def files_holding(home: Path, needle: str) -> list[str]:
    return [
        str(p.relative_to(home))
        for p in sorted(home.rglob("*"))
        if p.is_file() and needle.encode() in p.read_bytes()
    ]


SECRET_DRAFTS: list[dict[str, object]] = [
    {"text": "Booked the Lyon hotel, confirmation 8812"},
    {
        "text": f"Deploy with OPENAI_API_KEY={OPENAI} tonight",
        "actions": [
            {
                "tool": "http.get",
                "arguments": {"url": "https://api", "headers": {"Authorization": f"Bearer {JWT}"}},
                "result": {"password": "hunter2-Lyon"},
            }
        ],
    },
]


@pytest.fixture(autouse=True)
def lexical_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_NOTEBOOK_EMBEDDER", "none")


@pytest.mark.parametrize("kind", ["sqlite", "yaml"])
def test_mask_mode_records_no_secret_and_says_so(tmp_path: Path, kind: str) -> None:
    home = home_with(tmp_path, kind, "mask")
    with Notebook.open(home) as nb:
        session = nb.start_session("Deploy")
        plain, masked = nb.record_many(session.id, SECRET_DRAFTS)
        assert (
            masked.content.text == "Deploy with OPENAI_API_KEY=[secret:openai key masked] tonight"
        )
        assert masked.actions[0].result == {"password": "[secret:password masked]"}
        assert not any(
            "sk-" in c for c in masked.metadata.concepts + masked.metadata.retrieval_keys
        )
        assert plain.content.text == SECRET_DRAFTS[0]["text"]  # nothing else changes
        [entry] = [d for d in nb.get_session(session.id).decisions if d.who == AUDIT_WHO]
        assert entry.what == f"masked 3 secrets (openai key, credential, password) in {masked.id}"
    for secret in (OPENAI, JWT, "hunter2", OPENAI[8:30], JWT[40:70]):
        assert files_holding(home, secret) == [], secret
    assert files_holding(home, "[secret:openai key masked]")


@pytest.mark.parametrize("kind", ["sqlite", "yaml"])
def test_refuse_mode_records_nothing_and_says_how_to_go_on(tmp_path: Path, kind: str) -> None:
    home = home_with(tmp_path, kind, "refuse")
    with Notebook.open(home) as nb:
        session = nb.start_session("Deploy")
        before = nb.get_session(session.id)
        with pytest.raises(InvalidInput) as info:
            nb.record_many(session.id, SECRET_DRAFTS)
        message = str(info.value)
        assert message.startswith("moment 1: it holds 3 secrets (openai key, credential, password)")
        assert "privacy.secrets" in message and "mask it yourself" in message
        assert OPENAI not in message and "hunter2" not in message
        assert nb.moments() == [] and nb.get_session(session.id) == before
        # a moment without a secret is recorded as usual
        assert nb.record(session.id, "Booked the Lyon hotel").id == "m_1"
    assert files_holding(home, OPENAI) == [] and files_holding(home, "hunter2") == []


def test_off_mode_records_the_text_as_given(tmp_path: Path) -> None:
    home = home_with(tmp_path, "sqlite", "off")
    with Notebook.open(home) as nb:
        session = nb.start_session()
        moment = nb.record(session.id, f"key {OPENAI}")
        assert moment.content.text == f"key {OPENAI}"
        assert [d for d in nb.get_session(session.id).decisions if d.who == AUDIT_WHO] == []


# -- properties -----------------------------------------------------------------------------

SECRETS = [secret for _, _, secret in POSITIVES[:14]]
texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=200)


@given(texts)
def test_masking_is_idempotent_and_leaves_plain_text_alone(text: str) -> None:
    masked, found = mask(text)
    assert mask(masked) == (masked, [])
    if not found:
        assert masked == text


@given(texts, st.sampled_from(POSITIVES), texts)
def test_a_secret_among_any_text_is_masked(
    before: str, positive: tuple[str, str, str], after: str
) -> None:
    _, text, secret = positive
    masked, found = mask(f"{before} {text} {after}")
    assert secret not in masked and found
    assert mask(masked) == (masked, [])
