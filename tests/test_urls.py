"""Credentials in URLs are masked wherever a URL is shown (tracegrade._urls)."""

from __future__ import annotations

import pytest

from tracegrade._urls import masked_url, masked_urls_in, url_secrets, without_credentials


@pytest.mark.parametrize(
    "url, shown",
    [
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("https://api.example.com/v1/", "https://api.example.com/v1/"),
        ("http://user:KEY@host:8000/v1", "http://***@host:8000/v1"),
        ("http://KEY@host/v1", "http://***@host/v1"),
        ("https://host/v1?api-key=KEY", "https://host/v1?api-key=***"),
        (
            "https://host/openai/v1?api-version=2024-10-21&key=KEY",
            "https://host/openai/v1?api-version=2024-10-21&key=***",
        ),
        ("https://u:p%40ss@host/v1?token=a%2Fb&flag", "https://***@host/v1?token=***&flag"),
    ],
)
def test_a_url_keeps_its_host_and_path_and_loses_its_credentials(url: str, shown: str) -> None:
    assert masked_url(url) == shown


def test_every_url_in_a_text_is_masked() -> None:
    text = "POST http://u:secret@h/v1/chat?api-key=k1 failed; see 'https://h2/x?sig=zz'."
    assert masked_urls_in(text) == (
        "POST http://***@h/v1/chat?api-key=*** failed; see 'https://h2/x?sig=***'."
    )


def test_the_secrets_of_a_url_as_written_and_decoded() -> None:
    secrets = url_secrets("http://the-user:p%40ssword@h/v1?api-key=a%2Fkey1&api-version=2024&x=1")
    assert set(secrets) == {"the-user", "p%40ssword", "p@ssword", "a/key1", "a%2Fkey1"}
    assert secrets == sorted(secrets, key=len, reverse=True)
    assert url_secrets("http://h/v1") == []


def test_a_url_taken_apart_for_the_client() -> None:
    bare, query, user = without_credentials("http://u%3A1:p%40ss@h:9/v1?api-key=k&api-version=1")
    assert bare == "http://h:9/v1"
    assert query == [("api-key", "k"), ("api-version", "1")]
    assert user == ("u:1", "p@ss")
    assert without_credentials("http://h/v1") == ("http://h/v1", [], None)
