"""nginx (Debian's package) as a reverse proxy in front of service replicas: a generated config under a
folder of the caller's, run in the foreground as the calling user, round robin without stickiness."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from ._served import free_port

# The directives a deployment needs in front of occusim (docs/deployment.md shows the same block).
_CONFIG = """\
daemon off;
{user}worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    upstream occusim {{
{servers}
        keepalive 64;
    }}
    server {{
        listen 127.0.0.1:{port};
        client_max_body_size 2m;
        location / {{
            proxy_pass http://occusim;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_read_timeout {read_timeout}s;
            proxy_send_timeout {read_timeout}s;
            # A call is answered by whichever replica got it; retrying it elsewhere could run it twice.
            proxy_next_upstream off;
        }}
    }}
}}
"""


def nginx_executable() -> str | None:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None)


def nginx_config(folder: Path, upstreams: list[str], port: int, *, read_timeout: int = 600) -> str:
    servers = "\n".join(f"        server {upstream};" for upstream in upstreams)
    # As root, workers would switch to `nobody`, which may not write the caller's folder.
    user = "user root;\n" if os.geteuid() == 0 else ""
    return _CONFIG.format(folder=folder, servers=servers, port=port, read_timeout=read_timeout, user=user)


class NginxProxy:
    """`nginx -g` with a generated config: one address spreading requests over `upstreams` (host:port)."""

    def __init__(self, folder: Path, upstreams: list[str], *, read_timeout: int = 600) -> None:
        executable = nginx_executable()
        if executable is None:
            raise FileNotFoundError("nginx is not installed (apt-get install nginx)")
        self.executable = executable
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        folder.mkdir(parents=True, exist_ok=True)
        self.config = folder / "nginx.conf"
        self.config.write_text(nginx_config(folder, upstreams, self.port, read_timeout=read_timeout))
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> NginxProxy:
        # -e: its startup log goes to the folder, not to /var/log, which only root may write.
        command = [self.executable, "-c", str(self.config), "-p", str(self.folder), "-e", str(self.folder / "error.log")]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while True:
            if self.process.poll() is not None:
                _, stderr = self.process.communicate()
                raise RuntimeError(f"nginx exited with {self.process.returncode}: {stderr.decode()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("nginx did not start listening within 20 s") from None
                time.sleep(0.05)

    def __exit__(self, *exc_info: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def errors(self) -> str:
        """What nginx logged at warn level or above (an upstream that failed shows here)."""
        log = self.folder / "error.log"
        return log.read_text() if log.exists() else ""
