"""A real Synapse for the Matrix tests: installed by scripts/install-synapse.sh into
.tools/synapse, started once per test session (per xdist worker: the Matrix tests share one
worker through their xdist_group) on a free loopback port, on SQLite, with registration by
shared secret and the rate limits opened for the test users. Where it could not be installed
the tests skip with the reason.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PREFIX = ROOT / ".tools" / "synapse"
INSTALL_FAILED = ROOT / ".tools" / "synapse-install-failed"
START_WITHIN = 120.0  # seconds: Synapse starts in a few, much slower on a loaded machine
OPEN = {"per_second": 10_000, "burst_count": 10_000}


def why_no_synapse() -> str | None:
    if INSTALL_FAILED.exists():
        return f"Synapse could not be installed: {INSTALL_FAILED.read_text().strip()}"
    if not (PREFIX / "bin" / "python").exists():
        return "Synapse is not installed (make tools, or bash scripts/install-synapse.sh)"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Account:
    user_id: str
    token: str
    device_id: str
    password: str


def _config(folder: Path, port: int, secret: str) -> dict[str, Any]:
    return {
        "server_name": "localhost",
        "pid_file": str(folder / "homeserver.pid"),
        "listeners": [
            {
                "port": port,
                "bind_addresses": ["127.0.0.1"],
                "type": "http",
                "tls": False,
                "x_forwarded": False,
                "resources": [{"names": ["client"], "compress": False}],
            }
        ],
        "database": {"name": "sqlite3", "args": {"database": str(folder / "homeserver.db")}},
        "media_store_path": str(folder / "media"),
        "signing_key_path": str(folder / "signing.key"),
        "registration_shared_secret": secret,
        "report_stats": False,
        "trusted_key_servers": [],
        "suppress_key_server_warning": True,
        "enable_metrics": False,
        "presence": {"enabled": False},
        "rc_message": OPEN,
        "rc_registration": OPEN,
        "rc_login": {"address": OPEN, "account": OPEN, "failed_attempts": OPEN},
        "rc_joins": {"local": OPEN, "remote": OPEN},
        "rc_joins_per_room": OPEN,
        "rc_invites": {"per_room": OPEN, "per_user": OPEN, "per_issuer": OPEN},
        "rc_room_creation": OPEN,
        "rc_3pid_validation": OPEN,
        "rc_admin_redaction": OPEN,
        "rc_key_requests": OPEN,
        "rc_media_create": OPEN,
        "max_upload_size": "50M",
        # Each test's gateway starts the bot without a sync position: Synapse would answer
        # its first sync with the previous one's cached answer (two minutes by default),
        # whose position then replays what the previous test's bot saw.
        "caches": {"sync_response_cache_duration": 0},
    }


class Synapse:
    """One homeserver process and its accounts."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.secret = secrets.token_hex(16)
        self.process: subprocess.Popen[bytes] | None = None
        self.accounts: dict[str, Account] = {}

    def start(self) -> None:
        config = self.folder / "homeserver.yaml"
        # JSON is YAML: no YAML writer needed.
        config.write_text(json.dumps(_config(self.folder, self.port, self.secret)))
        python = str(PREFIX / "bin" / "python")
        base = [python, "-m", "synapse.app.homeserver", "-c", str(config)]
        subprocess.run([*base, "--generate-keys"], check=True, capture_output=True, cwd=self.folder)
        self.log = open(self.folder / "synapse.log", "wb")  # closed in stop()
        self.process = subprocess.Popen(
            base, stdout=self.log, stderr=subprocess.STDOUT, cwd=self.folder
        )
        deadline = time.monotonic() + START_WITHIN
        while not self._healthy():
            if self.process.poll() is not None:
                raise RuntimeError(f"Synapse exited: {self.tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Synapse did not start in {START_WITHIN} s: {self.tail()}")
            time.sleep(0.1)  # polling a subprocess's health: there is nothing to await

    def tail(self) -> str:
        return (self.folder / "synapse.log").read_text(errors="replace")[-2000:]

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=1) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.log.close()

    def _post(
        self, path: str, body: dict[str, Any], token: str | None = None, method: str = "POST"
    ) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(
            self.url + path, json.dumps(body).encode(), headers, method=method
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            answer: dict[str, Any] = json.loads(response.read())
            return answer

    def limit(self, user_id: str, per_second: float | None, burst: int = 1) -> None:
        """The rate limit on ``user_id``'s events, as a homeserver's defaults would set it
        (Synapse's is 0.17 a second, bursts of 10); None: open again, as for every test user.
        """
        path = f"/_synapse/admin/v1/users/{user_id}/override_ratelimit"
        token = self.account("admin", admin=True).token
        if per_second is None:
            self._post(path, {}, token, "DELETE")
        else:
            body = {"messages_per_second": per_second, "burst_count": burst}
            self._post(path, body, token)

    def account(self, name: str, admin: bool = False) -> Account:
        """The account ``@name:localhost``, registered by shared secret on first use."""
        if name in self.accounts:
            return self.accounts[name]
        with urllib.request.urlopen(f"{self.url}/_synapse/admin/v1/register", timeout=30) as r:
            nonce = json.loads(r.read())["nonce"]
        password = secrets.token_hex(8)
        mac = hmac.new(self.secret.encode(), digestmod=hashlib.sha1)
        role = "admin" if admin else "notadmin"
        mac.update(f"{nonce}\0{name}\0{password}\0{role}".encode())
        answer = self._post(
            "/_synapse/admin/v1/register",
            {
                "nonce": nonce,
                "username": name,
                "password": password,
                "admin": admin,
                "mac": mac.hexdigest(),
            },
        )
        account = Account(answer["user_id"], answer["access_token"], answer["device_id"], password)
        self.accounts[name] = account
        return account
