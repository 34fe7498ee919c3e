"""Fake vendors that speak HTTP on loopback: VAPI, ElevenLabs, Hamming and an OpenAI-compatible chat server.

They stand in for the real services in the tests and the demo (``assay fake-vendors``), shaped after
the vendors' documented APIs, with faults a test can switch on (latency, 429 with ``Retry-After``,
bursts of 5xx, malformed bodies, runs that never finish, answers that stray from the vendor's document, ...) and an inventory of the objects they
hold, so a test can prove nothing was leaked. This package imports nothing else of ours.
"""

__all__: list[str] = []
