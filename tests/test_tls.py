"""harness/tls.py: every client of the process shares one SSL context per kind, made as httpx
makes its own: verifying for https, none for plain http."""

from __future__ import annotations

import ssl

from harness.tls import tls_for, verifying


def test_an_https_url_gets_one_shared_verifying_context() -> None:
    first, second = tls_for("https://api.openai.com/v1"), tls_for("https://example.com")
    assert first is second is verifying()
    assert first.verify_mode == ssl.CERT_REQUIRED and first.check_hostname
    assert first.get_ca_certs()  # the CA bundle is loaded (httpx's default: certifi)


def test_a_plain_http_url_gets_one_shared_context_that_loads_no_bundle() -> None:
    context = tls_for("http://127.0.0.1:8080")
    assert context is tls_for("http://localhost/jobs")
    assert context is not verifying()
    assert context.verify_mode == ssl.CERT_NONE and not context.get_ca_certs()
