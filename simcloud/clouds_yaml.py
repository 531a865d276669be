"""Write the clouds.yaml entries of a running simulated cloud."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from simcloud.identity import DOMAIN_NAME, AppCredential, Identity

ADMIN_ENTRY = "sim-admin"
MEMBER_ENTRY = "sim-member"
READONLY_ENTRY = "sim-admin-readonly"
SERVICE_ENTRY = "sim-tally-service"


def entries(base_url: str, identity: Identity, reader: AppCredential) -> dict[str, Any]:
    auth_url = f"{base_url}/identity/v3"

    def password_entry(user_name: str) -> dict[str, Any]:
        user = identity.users[user_name]
        return {
            "auth_type": "password",
            "auth": {"auth_url": auth_url, "username": user.name, "password": user.password,
                     "project_name": user.project_name, "user_domain_name": DOMAIN_NAME,
                     "project_domain_name": DOMAIN_NAME},
            "region_name": "RegionOne",
            "interface": "public",
            "identity_api_version": 3,
        }

    return {"clouds": {
        ADMIN_ENTRY: password_entry("admin"),
        MEMBER_ENTRY: password_entry("demo"),
        SERVICE_ENTRY: password_entry("tally"),
        READONLY_ENTRY: {
            "auth_type": "v3applicationcredential",
            "auth": {"auth_url": auth_url, "application_credential_id": reader.id,
                     "application_credential_secret": reader.secret},
            "region_name": "RegionOne",
            "interface": "public",
            "identity_api_version": 3,
        },
    }}


def write(path: Path, base_url: str, identity: Identity, reader: AppCredential) -> Path:
    """Write the file (mode 0600: it holds the simulated cloud's passwords)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(entries(base_url, identity, reader), sort_keys=False)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    return path
