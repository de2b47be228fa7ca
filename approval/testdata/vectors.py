#!/usr/bin/env python3
"""Writes vectors.json: approval test vectors computed independently of the
Go package, with Python's `cryptography` library and a plain base58 coder.

    python3 vectors.py > vectors.json

The seed is the secret key of RFC 8032 section 7.1, TEST 1, so the public key
can be checked against the RFC as well.
"""
import datetime
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


def field(b: bytes) -> bytes:
    return len(b).to_bytes(4, "big") + b


def payload(message, created_ms, message_id, channel_id):
    return (b"agentd-approval-v1" + field(message.encode()) +
            field(str(created_ms).encode()) + field(message_id.encode()) +
            field(channel_id.encode()))


SEED = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
key = Ed25519PrivateKey.from_private_bytes(SEED)
pub = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

long_message = " ".join(
    f"Step {i}: deploy shard {i} to eu-west-{i % 3} — ok ✓." for i in range(120)
)

cases = [
    ("ascii", "Deploy the staging build", "2025-01-02T03:04:05.678Z", "msg-0001", "telegram:12345"),
    ("unicode", "Grüße, 世界! 🚀 naïve café — \"quoted\" \\ back\nslash", "2025-06-30T23:59:59.999Z",
     "b1946ac9-2b2c-4c5e-9a8a-1f1d5c3e7f00", "discord:987654321"),
    ("empty-channel", "summarise the report", "2024-02-29T12:00:00.000Z", "42", ""),
    ("empty-message", "", "2030-12-31T00:00:00.001Z", "cron:nightly:7", "job:nightly"),
    ("long", long_message, "2025-03-14T15:09:26.535Z", "msg-long", "slack:C024BE91L"),
]

out = {
    "seed": SEED.hex(),
    "pubkey": b58(pub),
    "pubkeyHex": pub.hex(),
    "approvals": [],
}
for name, message, created, message_id, channel_id in cases:
    dt = datetime.datetime.strptime(created, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    ms = (dt - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)) // datetime.timedelta(milliseconds=1)
    p = payload(message, ms, message_id, channel_id)
    sig = key.sign(p)
    out["approvals"].append({
        "name": name,
        "message": message,
        "createdAt": created,
        "createdAtMillis": ms,
        "messageId": message_id,
        "channelId": channel_id,
        "payloadHex": p.hex(),
        "signature": b58(sig),
    })

print(json.dumps(out, indent=2, ensure_ascii=False))
