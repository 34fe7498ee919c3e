"""Every vendor's refused key is a configuration error that names the setting holding it, never the key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fake_servers import fake_elevenlabs, fake_hamming, fake_vapi

from assay.adapters.elevenlabs import ElevenLabsApi
from assay.adapters.hamming import HammingApi
from assay.adapters.http import VendorClient
from assay.adapters.vapi import VapiApi
from assay.core.errors import ConfigError

WRONG = "wrong-key-0123456789abcdef"
VENDORS: dict[str, tuple[Any, Callable[[str, str], Any], Callable[[Any], Any], str]] = {
    # vendor -> (its fake, its API over a client with a key, a documented call, the setting)
    "vapi": (fake_vapi, lambda url, key: VapiApi(VendorClient("vapi", url, {"Authorization": f"Bearer {key}"})),
             lambda api: api.find_assistants("x"), "ASSAY_VAPI_API_KEY"),
    "elevenlabs": (fake_elevenlabs, lambda url, key: ElevenLabsApi(VendorClient("elevenlabs", url, {"xi-api-key": key})),
                   lambda api: api.find_agents("x"), "ASSAY_ELEVENLABS_API_KEY"),
    "hamming": (fake_hamming, lambda url, key: HammingApi(VendorClient("hamming", url, {"Authorization": f"Bearer {key}"})),
                lambda api: api.status("tr_1"), "ASSAY_HAMMING_API_KEY"),
}


@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_a_refused_key_names_its_setting_and_not_the_key(vendor: str) -> None:
    fake, api_for, call, setting = VENDORS[vendor]
    with fake() as server, api_for(server.url, WRONG) as api:
        with pytest.raises(ConfigError) as err:
            call(api)
    message = str(err.value)
    assert "refused the key (HTTP 401" in message and f"check {setting}" in message and WRONG not in message
