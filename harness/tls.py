"""One SSL context per process for every HTTP client the harness makes (``verify=tls_for(url)``).

httpx builds a new SSL context for every client and transport it makes: a verifying one loads
the CA bundle (certifi's, or ``SSL_CERT_FILE``/``SSL_CERT_DIR`` as httpx reads them), 20-50 ms of
CPU each time; certification opens a channel per provider, a target's session a transport per
run. An ``ssl.SSLContext`` is safe to share between clients and threads once made, so each kind
is made once, on first use, exactly as httpx would make it (so ``SSL_CERT_FILE`` is read when
the process makes its first verifying client, and a later change of it is not seen).
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def _context(verify: bool) -> ssl.SSLContext:
    return httpx.create_ssl_context(verify=verify)


def tls_for(url: str) -> ssl.SSLContext:
    """httpx's ``verify`` for a client of ``url``: verifying (httpx's default) unless ``url`` is
    plain http, where there is no TLS to verify."""
    return _context(not url.startswith("http://"))


def verifying() -> ssl.SSLContext:
    """httpx's default verifying context, shared: for a client whose URLs are not known when it
    is made (a provider's SDK transport)."""
    return _context(True)
