"""nginx configuration for N Streamlit workers: the site (maps, upstream, server) and a wrapper for a user run.

``python -m serve.conf --upstream 10.0.0.11:8501 --upstream 10.0.0.12:8501 --listen 80`` prints the site
configuration for a department deployment (workers on other hosts or containers), ready for
``/etc/nginx/conf.d/``. ``make serve`` renders the same site for its local workers plus ``nginx.conf``,
which runs nginx as the user with every path inside one run directory.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
MAX_FAILS = 1
FAIL_TIMEOUT_S = 10
_UPSTREAM = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):([0-9]{1,5})$")


def _fill(template: str, values: dict[str, str]) -> str:
    text = (HERE / template).read_text(encoding="utf-8")
    for name, value in values.items():
        text = text.replace(f"@{name}@", value)
    left = re.findall(r"@[A-Z_]+@", text)
    if left:
        raise ValueError(f"{template}: no value for {', '.join(sorted(set(left)))}")
    return text


def check_upstream(upstream: str) -> str:
    """``host:port`` as nginx takes it (an IPv6 address in brackets); raises ValueError otherwise."""
    m = _UPSTREAM.match(upstream.strip())
    if not m or not 0 < int(m.group(2)) < 65536:
        raise ValueError(f"not host:port: {upstream!r}")
    return upstream.strip()


def site_conf(upstreams: list[str], listen: str, access_log: str) -> str:
    """The http-level configuration: websocket and sticky maps, the upstream of workers, the server."""
    if not upstreams:
        raise ValueError("at least one upstream host:port is needed")
    servers = "\n".join(
        f"    server {check_upstream(u)} max_fails={MAX_FAILS} fail_timeout={FAIL_TIMEOUT_S}s;" for u in upstreams
    )
    return _fill("site.conf.template", {"SERVERS": servers, "LISTEN": listen, "ACCESS_LOG": access_log})


def write_user_conf(prefix: Path, upstreams: list[str], listen: str) -> Path:
    """Write ``site.conf`` and ``nginx.conf`` for a non-root nginx under ``prefix``; returns nginx.conf."""
    prefix = prefix.resolve()
    (prefix / "tmp").mkdir(parents=True, exist_ok=True)
    (prefix / "site.conf").write_text(site_conf(upstreams, listen, str(prefix / "access.log")), encoding="utf-8")
    conf = prefix / "nginx.conf"
    conf.write_text(_fill("nginx.conf.template", {"PREFIX": str(prefix)}), encoding="utf-8")
    return conf


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m serve.conf", description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", action="append", required=True, help="a worker's host:port (repeat)")
    ap.add_argument("--listen", default="80", help="nginx's listen argument (port or address:port), default 80")
    ap.add_argument("--access-log", default="/var/log/nginx/attn_access.log")
    args = ap.parse_args(argv)
    try:
        print(site_conf(args.upstream, args.listen, args.access_log), end="")
    except ValueError as err:
        ap.error(str(err))


if __name__ == "__main__":
    main()
