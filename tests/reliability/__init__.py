"""Reliability suites: crashes, concurrency, hostile input, scope isolation, injection labels, a third-party client."""
