"""A tiny client for the simulated APIs: tokens and GETs with requests."""

from __future__ import annotations

from typing import Any

import requests

from simcloud.server import SimCloudServer


def password_token(sim: SimCloudServer, user: str) -> str:
    account = sim.identity.users[user]
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": account.name, "domain": {"name": "Default"}, "password": account.password}}},
        "scope": {"project": {"name": account.project_name, "domain": {"name": "Default"}}}}}
    response = requests.post(f"{sim.base_url}/identity/v3/auth/tokens", json=body, timeout=10)
    assert response.status_code == 201, response.text
    return response.headers["X-Subject-Token"]


def app_credential_token(sim: SimCloudServer, cred_id: str, secret: str) -> requests.Response:
    body = {"auth": {"identity": {"methods": ["application_credential"],
                                  "application_credential": {"id": cred_id, "secret": secret}}}}
    return requests.post(f"{sim.base_url}/identity/v3/auth/tokens", json=body, timeout=10)


def get(sim: SimCloudServer, path: str, token: str | None, version: str | None = None,
        **params: Any) -> requests.Response:
    headers = {}
    if token is not None:
        headers["X-Auth-Token"] = token
    if version is not None:
        headers["OpenStack-API-Version"] = version
    url = path if path.startswith("http") else f"{sim.base_url}{path}"
    return requests.get(url, headers=headers, params=params or None, timeout=30)
