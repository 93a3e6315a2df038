"""Support code of the test suite: gateways, upstream servers, PostgreSQL, browsers."""
