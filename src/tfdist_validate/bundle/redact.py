"""What must not leave the machine: secret values (from secret-looking variables and URL credentials),
and, unless --no-anonymize, GPU UUIDs and the hostname, replaced by stable placeholders.

Every file of the bundle passes through one Redactor, so a secret is removed wherever it appears: in the
environment listing, in `pip freeze` (git+https://TOKEN@... requirements), in the reports.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[REDACTED]"
HOSTNAME = "<hostname>"
SECRET_NAME = re.compile(
    r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|CREDS|AUTH|COOKIE|SESSION|PRIVATE|SIGNATURE"
    r"|CERT",
    re.IGNORECASE,
)
# Values too common to be secrets: scrubbing them everywhere would only garble the bundle.
_HARMLESS_VALUES = {"", "0", "1", "true", "false", "yes", "no", "none", "null", "on", "off"}
_MIN_SECRET_LEN = 4
_URL_CREDENTIALS = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.-]*://)[^/\s:@]+(?::[^/\s@]*)?@", re.IGNORECASE)
_HEX = "[0-9a-fA-F]"
_UUID = f"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}"
_GPU_UUID = re.compile(rf"\b(?P<kind>MIG-GPU|MIG|GPU)-{_UUID}(?P<tail>(?:/\d+){{0,2}})")
_SERIAL = re.compile(r"^(?P<head>\s*Serial Number\s*:\s*)(?P<value>\S.*)$", re.MULTILINE)
_UNIDENTIFYING_HOSTS = {"localhost", "localhost.localdomain", "ip6-localhost"}


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


class Redactor:
    def __init__(self, env: Mapping[str, str], *, anonymize: bool, hostnames: Iterable[str] = ()) -> None:
        secrets = {
            value
            for name, value in env.items()
            if is_secret_name(name)
            and len(value) >= _MIN_SECRET_LEN
            and value.strip().lower() not in _HARMLESS_VALUES
        }
        forms = set(secrets) | {json.dumps(s)[1:-1] for s in secrets}  # as written inside JSON strings
        self._secrets = sorted(forms, key=len, reverse=True)  # longest first: a secret containing another
        self.anonymize = anonymize
        hosts = sorted(
            {h for h in hostnames if len(h) >= 3 and h.lower() not in _UNIDENTIFYING_HOSTS},
            key=len,
            reverse=True,
        )
        self._hosts = (
            re.compile("|".join(rf"(?<![\w-]){re.escape(h)}(?![\w-])" for h in hosts), re.IGNORECASE)
            if hosts
            else None
        )
        self._uuids: dict[str, str] = {}

    def _uuid(self, match: re.Match[str]) -> str:
        kind = match.group("kind")
        key = match.group(0)
        if key not in self._uuids:
            number = sum(1 for placeholder in self._uuids.values() if placeholder.startswith(kind + "-"))
            self._uuids[key] = f"{kind}-00000000-0000-0000-0000-{number:012d}{match.group('tail')}"
        return self._uuids[key]

    def text(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        text = _URL_CREDENTIALS.sub(lambda m: m.group("scheme") + REDACTED + "@", text)
        if self.anonymize:
            text = _GPU_UUID.sub(self._uuid, text)
            if self._hosts is not None:
                text = self._hosts.sub(HOSTNAME, text)
            text = _SERIAL.sub(lambda m: m.group("head") + REDACTED, text)
        return text

    def value(self, value: Any) -> Any:
        """A JSON document, redacted string by string so that it stays valid JSON."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(str(k)): self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and self.text(str(value)) != str(value)
        ):
            return REDACTED  # a number that happens to equal a secret
        return value

    def environment(self, env: Mapping[str, str], names: Iterable[str]) -> list[str]:
        """`NAME=value` lines; a secret-looking variable shows only that it is set."""
        lines = []
        for name in sorted(names):
            value = env[name]
            lines.append(f"{name}={REDACTED if is_secret_name(name) else self.text(value)}")
        return lines

    def leaks(self, text: str) -> list[str]:
        """Secret values still present in `text` (a last check before the archive is written)."""
        return [s for s in self._secrets if s in text]
