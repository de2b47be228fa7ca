#!/usr/bin/env python3
"""Writes vectors.json: approval test vectors computed independently of the
Go package, with Python's `cryptography` library, a plain base58 coder and
a JSON canonicalization (RFC 8785) written here from the RFC.

    python3 vectors.py > vectors.json

The seed is the secret key of RFC 8032 section 7.1, TEST 1, so the public key
can be checked against the RFC as well.
"""
import datetime
import decimal
import hashlib
import json

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives import serialization

ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def b58(data: bytes) -> str:
    n = int.from_bytes(data, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = ALPHABET[r] + out
    zeros = len(data) - len(data.lstrip(b"\0"))
    return "1" * zeros + out


def es6_number(f: float) -> str:
    """ECMAScript Number::toString for a finite double (RFC 8785 3.2.2.3)."""
    if f == 0:
        return "0"
    if f < 0:
        return "-" + es6_number(-f)
    # repr gives the shortest digits that read back as f.
    sign, digits, exp = decimal.Decimal(repr(f)).normalize().as_tuple()
    s = "".join(map(str, digits))
    k = len(s)
    n = exp + k  # f = 0.s * 10**n
    if k <= n <= 21:
        return s + "0" * (n - k)
    if 0 < n <= 21:
        return s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + s
    e = n - 1
    return s[0] + ("." + s[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))


def canonical(v) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, float):
        return es6_number(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ",".join(canonical(e) for e in v) + "]"
    if isinstance(v, dict):
        keys = sorted(v, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + canonical(v[k]) for k in keys) + "}"
    raise TypeError(type(v))


def parse(text: str):
    # Numbers are doubles, as in JavaScript.
    return json.loads(text, parse_int=float, parse_float=float)


def field(b: bytes) -> bytes:
    return len(b).to_bytes(4, "big") + b


def payload(tag, *fields):
    return tag.encode() + b"".join(field(f.encode()) for f in fields)


def millis(t):
    dt = datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    return (dt - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)) // datetime.timedelta(milliseconds=1)


SEED = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
key = Ed25519PrivateKey.from_private_bytes(SEED)
pub = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

long_message = " ".join(
    f"Step {i}: deploy shard {i} to eu-west-{i % 3} — ok ✓." for i in range(120)
)

messages = [
    ("ascii", "Deploy the staging build", "2025-01-02T03:04:05.678Z", "msg-0001", "telegram:12345"),
    ("unicode", "Grüße, 世界! 🚀 naïve café — \"quoted\" \\ back\nslash", "2025-06-30T23:59:59.999Z",
     "b1946ac9-2b2c-4c5e-9a8a-1f1d5c3e7f00", "discord:987654321"),
    ("empty-channel", "summarise the report", "2024-02-29T12:00:00.000Z", "42", ""),
    ("empty-message", "", "2030-12-31T00:00:00.001Z", "cron:nightly:7", "job:nightly"),
    ("long", long_message, "2025-03-14T15:09:26.535Z", "msg-long", "slack:C024BE91L"),
]

# (message case, audience, tool, arguments as sent, signedAt: when the call
# was made, from the moment the message came in to an hour later)
calls = [
    ("ascii", "https://deploy.example.com/mcp", "deploy", '{"env": "staging", "replicas": 3}', "2025-01-02T04:05:06.789Z"),
    ("unicode", "https://chat.example.com/mcp", "post",
     '{"text": "Grüße 🚀 \\u2028 \\u001f\\t\\"q\\" \\\\", "b": [1, 2.50, -0, 1e21, 1e-7], "a": {"z": null, "é": true}}',
     "2025-07-01T00:00:00.000Z"),
    ("empty-channel", "files", "read_report", "{}", "2024-02-29T12:00:00.000Z"),
    ("empty-message", "files", "nightly", "", "2030-12-31T00:00:00.002Z"),
    ("long", "http://127.0.0.1:8931/mcp", "log", '{"\\ue000": 1, "\\ud83d\\ude00": 2, "a": 3, "A": 4, "": 5, "lines": [' +
     ", ".join(str(i * 1.5) for i in range(40)) + "]}", "2025-03-14T15:10:00.999Z"),
]

# Canonical forms alone: numbers and strings at their edges.
canonical_cases = [
    '[0, -0, 1, -1, 1.0, 0.1, 0.000001, 0.0000001, 1e20, 1e21, 123456789012345678901234567890, 4.35, 5e-324, 1.7976931348623157e308, 9007199254740993, 2.5e-8, 333333333.33333329, 1E+2]',
    '{"b": 1, "a": 2, "a": 3}',
    '"\\u0000\\u0008\\u0009\\u000a\\u000c\\u000d\\u001f \\u007f \\u2028 \\u2029 \\/ </script> é 😀"',
    '{"\\u20ac": "euro", "\\r": "cr", "1": "one", "\\ud83d\\ude00": "smiley", "\\u0080": "ctrl", "\\u00f6": "o"}',
    ' [ {"x" : [ ] , "y" : { } } , true , false , null ] ',
]

by_name = {m[0]: m for m in messages}
out = {
    "seed": SEED.hex(),
    "pubkey": b58(pub),
    "pubkeyHex": pub.hex(),
    "approvals": [],
    "messages": [],
    "canonical": [],
}
for name, audience, tool, args, signed in calls:
    _, message, created, message_id, channel_id = by_name[name]
    ms = millis(created)
    signed_ms = millis(signed)
    canon = canonical(parse(args if args.strip() not in ("", "null") else "{}"))
    args_hash = hashlib.sha256(canon.encode()).hexdigest()
    p = payload("agentd-approval-v3", message, str(ms), message_id, channel_id, audience, tool, args_hash, str(signed_ms))
    out["approvals"].append({
        "name": name,
        "message": message,
        "createdAt": created,
        "createdAtMillis": ms,
        "signedAt": signed,
        "signedAtMillis": signed_ms,
        "messageId": message_id,
        "channelId": channel_id,
        "audience": audience,
        "tool": tool,
        "arguments": args,
        "canonicalArguments": canon,
        "argumentsHash": args_hash,
        "payloadHex": p.hex(),
        "signature": b58(key.sign(p)),
    })
for name, message, created, message_id, channel_id in messages:
    p = payload("agentd-message-v1", message, str(millis(created)), message_id, channel_id)
    sig = b58(key.sign(p))
    out["messages"].append({
        "name": name,
        "payloadHex": p.hex(),
        "signature": sig,
        "fingerprint": hashlib.sha256(sig.encode()).hexdigest()[:16],
    })
for text in canonical_cases:
    out["canonical"].append({"input": text, "output": canonical(parse(text))})

print(json.dumps(out, indent=2, ensure_ascii=False))
