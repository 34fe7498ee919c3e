"""Our redaction rules against ``detect-secrets`` on the same corpus: missed secrets and false positives.

Run with ``python -m bench.secrets_detectors`` after ``pip install -e '.[alternatives]'`` (detect-secrets
is never imported by assay). Each corpus value is written as it would be stored (JSON, indented, one
file each) and scanned with detect-secrets' default plugins and filters, as ``detect-secrets scan``
would; every value it reports is then replaced, as a redactor built on it would do. A planted secret
is missed when it survives; a look-alike is a false positive when anything in it is reported (for our
rules: when :func:`assay.core.redact.redact` changes it). The figures are in
``docs/decisions/secret-redaction.md``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from .secrets import corpus


def detect_secrets_redact(text: str, folder: Path) -> tuple[str, int]:
    """``text`` with every value detect-secrets reports in it replaced; and how many it reported."""
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    path = folder / "value.json"
    path.write_text(text)
    found = SecretsCollection()
    with default_settings():
        found.scan_file(str(path))
    values = [s.secret_value for _, s in found if s.secret_value]
    for value in sorted(values, key=len, reverse=True):
        text = text.replace(value, "[redacted]")
    return text, len(values)


def compare() -> dict[str, dict[str, int]]:
    """{detector: {planted, missed, false_positives, look_alikes}} for ours and detect-secrets."""
    from assay.core.redact import redact

    planted, look_alikes = corpus()
    out: dict[str, dict[str, int]] = {}

    def text(value: Any) -> str:
        return json.dumps(value, indent=2, ensure_ascii=False)

    out["assay rules"] = {
        "planted": len(planted),
        "missed": sum(p.secret in text(redact(p.value)) for p in planted),
        "false_positives": sum(redact(v) != v for v in look_alikes),
        "look_alikes": len(look_alikes),
    }
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        out["detect-secrets"] = {
            "planted": len(planted),
            "missed": sum(p.secret in detect_secrets_redact(text(p.value), folder)[0] for p in planted),
            "false_positives": sum(detect_secrets_redact(text(v), folder)[1] > 0 for v in look_alikes),
            "look_alikes": len(look_alikes),
        }
    return out


def main() -> None:
    for name, figures in compare().items():
        print(f"{name:>14}: {figures['missed']} of {figures['planted']} planted secrets missed, "
              f"{figures['false_positives']} of {figures['look_alikes']} look-alikes flagged")


if __name__ == "__main__":
    main()
