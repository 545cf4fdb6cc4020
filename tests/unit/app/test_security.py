"""What the server refuses before Dash sees it: foreign Host headers (DNS rebinding), large
bodies, malformed callback payloads, bad tokens; and what never reaches its log."""

from __future__ import annotations

import logging


def test_the_token_never_reaches_the_access_log(caplog):
    from app.security import RedactToken

    record = logging.LogRecord("werkzeug", logging.INFO, "", 0, '%s - "%s" %s',
                               ("127.0.0.1", "GET /?token=s3cret&x=1 HTTP/1.1", "200"), None)
    assert RedactToken().filter(record)
    assert "s3cret" not in record.getMessage() and "token=***" in record.getMessage()
