"""What never reaches the server's log (app/security.py): the access token in a URL. The
server's refusals are tested on a real run in tests/integration/app/test_security.py."""

from __future__ import annotations

import logging


def test_the_token_never_reaches_the_access_log(caplog):
    from app.security import RedactToken

    record = logging.LogRecord("werkzeug", logging.INFO, "", 0, '%s - "%s" %s',
                               ("127.0.0.1", "GET /?token=s3cret&x=1 HTTP/1.1", "200"), None)
    assert RedactToken().filter(record)
    assert "s3cret" not in record.getMessage() and "token=***" in record.getMessage()
