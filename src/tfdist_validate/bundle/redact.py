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
_TOKEN_LIKE_LEN = 16
# Terraform's input variables share TensorFlow's TF_ prefix and routinely carry credentials.
_SECRET_PREFIXES = ("TF_VAR_",)
# The user-info of a URL, whatever its shape (`user:pass@`, `:token@`, `token@`, a password holding `@`):
# everything from the scheme to the LAST `@` before the path.
_URL_CREDENTIALS = re.compile(r"(?P<scheme>\b[a-z][a-z0-9+.-]*://)[^/?#\s\"'<>]*@", re.IGNORECASE)
# Values that are secrets by their shape, whatever the variable or file they appear in.
_SECRET_SHAPES = re.compile(
    "|".join(
        [
            # a private key, to its END line or, cut short, to the end of the text
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)",
            r"\beyJ[\w-]{5,}\.[\w-]{5,}\.[\w-]*",  # a JWT: base64url JSON header "{"..., payload, signature
            r"\bgh[pousr]_[A-Za-z0-9]{30,}",  # GitHub tokens
            r"\bgithub_pat_\w{30,}",
            r"\bglpat-[\w-]{20,}",  # GitLab
            r"\bxox[abposr]-[\w-]{10,}",  # Slack
            r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key ids
            r"\bsk-(?:proj-|ant-)?[\w-]{20,}",  # OpenAI, Anthropic
            r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}",  # Stripe
            r"\bAIza[\w-]{35}",  # Google API keys
            r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face
            r"\bnpm_[A-Za-z0-9]{36}",
            r"\bpypi-[\w-]{50,}",
            r"\bdo[por]_v1_[a-f0-9]{64}",  # DigitalOcean
            r"\bSG\.[\w-]{16,}\.[\w-]{30,}",  # SendGrid
        ]
    ),
    re.ASCII,
)
# `AccountKey=...;` in Azure connection strings, `Password=...` in ODBC ones, a SAS token's `sig=...`
_SECRET_ASSIGNMENTS = re.compile(
    r"(?P<key>\b(?:AccountKey|SharedAccessKey|SharedAccessSignature|Password|Pwd|AccessKey|sig)=)"
    r"(?P<value>[^;&\s\"']+)",
    re.IGNORECASE,
)
# Field names that say "secret" in JSON (a `password` inside TF_CONFIG, say); narrower than SECRET_NAME, which
# would also take the report's own fields such as a diagnosis' `signature`.
_SECRET_FIELD = r"(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential)"
_SECRET_FIELD_NAME = re.compile(_SECRET_FIELD, re.IGNORECASE)
_SECRET_JSON_FIELD = re.compile(
    rf"(?P<key>\"[^\"]*{_SECRET_FIELD}[^\"]*\"\s*:\s*)\"(?P<value>(?:[^\"\\]|\\.)*)\"", re.IGNORECASE
)
_HEX = "[0-9a-fA-F]"
_UUID = f"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}"
_GPU_UUID = re.compile(rf"\b(?P<kind>MIG-GPU|MIG|GPU)-{_UUID}(?P<tail>(?:/\d+){{0,2}})")
_SERIAL = re.compile(r"^(?P<head>\s*Serial Number\s*:\s*)(?P<value>\S.*)$", re.MULTILINE)
_UNIDENTIFYING_HOSTS = {"localhost", "localhost.localdomain", "ip6-localhost"}


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name)) or name.upper().startswith(_SECRET_PREFIXES)


def secret_parts(value: str) -> list[str]:
    """The parts of a value that are secrets by their shape (a JWT inside "Bearer ...", a URL's password)."""
    parts = [m.group(0) for m in _SECRET_SHAPES.finditer(value)]
    parts += [m.group("value") for m in _SECRET_ASSIGNMENTS.finditer(value)]
    parts += [m.group("value") for m in _SECRET_JSON_FIELD.finditer(value)]
    for match in _URL_CREDENTIALS.finditer(value):
        user, colon, password = match.group(0)[len(match.group("scheme")) : -1].partition(":")
        parts.append(password)
        # the user is the secret in `https://TOKEN@host`; a short name (`git`, `oauth2`) is not worth
        # scrubbing from every file of the bundle
        if not colon or len(user) >= _TOKEN_LIKE_LEN:
            parts.append(user)
    return [p for p in parts if len(p) >= _MIN_SECRET_LEN and p.strip().lower() not in _HARMLESS_VALUES]


class Redactor:
    def __init__(self, env: Mapping[str, str], *, anonymize: bool, hostnames: Iterable[str] = ()) -> None:
        secrets = {
            value
            for name, value in env.items()
            if is_secret_name(name)
            and len(value) >= _MIN_SECRET_LEN
            and value.strip().lower() not in _HARMLESS_VALUES
        }
        # a secret-shaped value is removed wherever it appears, whatever the variable that held it
        secrets |= {part for value in env.values() for part in secret_parts(value)}
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
        text = _SECRET_SHAPES.sub(REDACTED, text)
        text = _SECRET_ASSIGNMENTS.sub(lambda m: m.group("key") + REDACTED, text)
        text = _SECRET_JSON_FIELD.sub(lambda m: m.group("key") + f'"{REDACTED}"', text)
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
            return {
                self.text(str(k)): REDACTED
                if isinstance(v, str) and is_secret_name(str(k))
                else self.value(v)
                for k, v in value.items()
            }
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
