"""fitlab on every core, and on several machines: Streamlit replicas behind
Debian's nginx with sticky sessions.

One Streamlit process runs its pages in one interpreter, about one core. A
class on one link needs more:

    python -m tools.serve --replicas 2 --port 8501 [--address 0.0.0.0] [--upstream HOST:PORT ...]

starts `--replicas` `streamlit run streamlit_app.py` processes on
127.0.0.1 (free ports) and nginx (installed, not installed here: Debian's
`nginx` package, as .ci/run and the README have it) on `--address`:`--port`
with deploy/nginx.conf, whose upstream list gets the replicas and every
`--upstream` (a replica another machine runs: see docs/robustness.md). The
proxy passes websockets through, keeps each browser on one replica by a
cookie, and answers /_stcore/health from a replica. SIGTERM or Ctrl-C
stops nginx and every replica; so does one of them exiting (exit status 1),
so that a supervisor restarts the whole.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tools.server import ROOT, free_port, health_seconds, start_server, stop_server, wait_healthy

CONFIG = ROOT / "deploy" / "nginx.conf"
_REPLICA = re.compile(r"^replica on 127\.0\.0\.1:(\d+) \(pid (\d+)\)$", re.M)
_PROXY = re.compile(r"^serving on http://\S+ \(\d+ replicas, nginx pid (\d+)\)$", re.M)


def start_serve(port: int, replicas: int, log) -> subprocess.Popen:
    """`python -m tools.serve` on 127.0.0.1:`port` with `replicas`, its
    output (and the replicas') to `log`."""
    return subprocess.Popen([sys.executable, "-m", "tools.serve", "--replicas", str(replicas), "--port", str(port)],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)


def wait_serving(log_path: Path, serve: subprocess.Popen, seconds: float = 180) -> tuple[dict[int, int], int]:
    """Wait until `serve` (start_serve's, writing to `log_path`) serves;
    returns its replicas ({port: pid}) and nginx's pid."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        text = log_path.read_text()
        serving = _PROXY.search(text)
        if serving:
            return {int(port): int(pid) for port, pid in _REPLICA.findall(text)}, int(serving.group(1))
        if serve.poll() is not None:
            raise RuntimeError(f"tools.serve exited with code {serve.returncode}:\n{text[-2000:]}")
        time.sleep(0.1)
    raise RuntimeError(f"tools.serve did not serve in {seconds} s")


def nginx_config(listen: str, upstreams: list[str], prefix: Path) -> str:
    """deploy/nginx.conf with its placeholders filled in."""
    servers = "\n        ".join(f"server {u} max_fails=1 fail_timeout=10s;" for u in upstreams)
    health = "\n        ".join(f"server {u} max_fails=0;" for u in upstreams)
    return (CONFIG.read_text().replace("@LISTEN@", listen).replace("@UPSTREAMS@", servers)
            .replace("@HEALTH_UPSTREAMS@", health)
            .replace("@PREFIX@", str(prefix)))


def start_nginx(config: str, prefix: Path) -> subprocess.Popen:
    """nginx in the foreground with `config`, its files under `prefix`."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        raise SystemExit("nginx is not installed: apt-get install nginx (see the README)")
    path = prefix / "nginx.conf"
    path.write_text(config)
    # -e: errors to stderr from the start (the default log may not be writable).
    command = [nginx, "-p", str(prefix), "-e", "stderr", "-c", str(path), "-g", "daemon off;"]
    check = subprocess.run([*command, "-t", "-q"], capture_output=True, text=True)
    if check.returncode:
        raise SystemExit(f"nginx refused its config:\n{check.stderr}")
    return subprocess.Popen(command)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=os.cpu_count() or 1,
                        help="streamlit processes on this machine (default: one per core)")
    parser.add_argument("--port", type=int, default=8501)
    parser.add_argument("--address", default="127.0.0.1", help="where the proxy listens")
    parser.add_argument("--upstream", action="append", default=[], metavar="HOST:PORT",
                        help="a replica on another machine (repeat for each)")
    args = parser.parse_args()
    if args.replicas < 0 or args.replicas + len(args.upstream) < 1:
        parser.error("need at least one replica (--replicas or --upstream)")

    stopping = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda signum, frame: stopping.append(signum))

    # One cookie secret for all (Streamlit's XSRF cookie is signed with it):
    # a browser moved to another replica, its own gone, keeps a valid cookie.
    os.environ.setdefault("STREAMLIT_SERVER_COOKIE_SECRET", secrets.token_hex(32))
    ports = [free_port() for _ in range(args.replicas)]
    replicas = [start_server(port, None) for port in ports]
    proxy = None
    prefix = Path(tempfile.mkdtemp(prefix="fitlab-nginx-"))
    # nginx started as root runs its worker as nobody, which must reach its temp folders.
    prefix.chmod(0o755)
    status = 0
    try:
        for port, replica in zip(ports, replicas):
            wait_healthy(f"http://127.0.0.1:{port}", replica, 120)
            print(f"replica on 127.0.0.1:{port} (pid {replica.pid})", flush=True)
        upstreams = [f"127.0.0.1:{port}" for port in ports] + args.upstream
        proxy = start_nginx(nginx_config(f"{args.address}:{args.port}", upstreams, prefix), prefix)
        deadline = time.monotonic() + 30
        while health_seconds(f"http://127.0.0.1:{args.port}", 2) is None and not stopping:
            if proxy.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"nginx did not serve on {args.address}:{args.port}")
            time.sleep(0.05)
        print(f"serving on http://{args.address}:{args.port} ({len(upstreams)} replicas, nginx pid {proxy.pid})",
              flush=True)
        while not stopping:
            ended = [p for p in [proxy, *replicas] if p.poll() is not None]
            if ended:
                print(f"pid {ended[0].pid} exited with {ended[0].returncode}: stopping", file=sys.stderr)
                status = 1
                break
            time.sleep(0.2)
    except RuntimeError as failed:  # a replica that died or never became healthy
        print(failed, file=sys.stderr)
        status = 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if proxy is not None:
            stop_server(proxy, 10)  # SIGTERM: nginx's fast stop, open websockets closed
        for replica in replicas:
            replica.terminate()
        for replica in replicas:
            stop_server(replica, 30)
        shutil.rmtree(prefix, ignore_errors=True)
    sys.exit(status)


if __name__ == "__main__":
    main()
