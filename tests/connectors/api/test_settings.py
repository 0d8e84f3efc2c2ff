"""The API's settings: a token pasted where its digest belongs is refused without showing
any of it, in the message or in a traceback; admin tokens are listed or named."""

from __future__ import annotations

import traceback

import pytest

from jobstream._connectors.api.auth import hash_token
from jobstream._connectors.api.settings import load_api_settings
from jobstream._pipeline.errors import ConfigurationError

TOKEN = "s3cr3t-token-pasted-by-mistake"


def test_a_plaintext_token_in_the_settings_is_refused_showing_none_of_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JOBSTREAM_API_TOKENS", f'{{"{TOKEN}": "acme"}}')
    with pytest.raises(ConfigurationError) as refused:
        load_api_settings()
    shown = "".join(traceback.format_exception(refused.value))
    assert "JOBSTREAM_API_TOKENS" in str(refused.value)
    assert TOKEN[:4] not in shown and "s3cr" not in shown


def test_a_digest_is_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBSTREAM_API_TOKENS", f'{{"{hash_token(TOKEN)}": "acme"}}')
    assert load_api_settings().api_tokens == {hash_token(TOKEN): "acme"}


def test_admin_tokens_are_a_list_or_named(monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = hash_token("a"), hash_token("b")
    monkeypatch.setenv("JOBSTREAM_API_ADMIN_TOKENS", f"{first},{second}")
    assert load_api_settings().api_admin_tokens == {first: None, second: None}
    monkeypatch.setenv("JOBSTREAM_API_ADMIN_TOKENS", f'{{"{first}": "ops-alice"}}')
    assert load_api_settings().api_admin_tokens == {first: "ops-alice"}
    monkeypatch.setenv("JOBSTREAM_API_ADMIN_TOKENS", f'{{"{first}": " "}}')
    with pytest.raises(ConfigurationError) as refused:
        load_api_settings()
    assert "a name is a non-blank string" in str(refused.value)
