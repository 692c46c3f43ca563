"""The nginx configuration of `make serve`: what it says, that nginx accepts it, and that docs/deploy.md shows it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from serve.conf import check_upstream, site_conf, write_user_conf
from serve.supervisor import find_nginx

DEPLOY = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"
UPSTREAMS = ["10.0.0.11:8501", "10.0.0.11:8502", "10.0.0.12:8501", "10.0.0.12:8502"]


def location(conf: str, name: str) -> str:
    start = conf.index(f"location {name} {{")
    return conf[start : conf.index("}", start)]


def test_sticky_by_a_cookie_that_falls_back_to_the_request_id():
    conf = site_conf(["127.0.0.1:9001", "127.0.0.1:9002"], "8501", "/tmp/a.log")
    assert not re.search(r"^\s*ip_hash\s*;", conf, re.M)  # one NAT address would be one worker
    assert re.search(r"hash \$attn_key consistent;", conf)
    keys = conf[conf.index("map $cookie_attn_worker $attn_key") :]
    keys = keys[: keys.index("}")]
    assert re.search(r'""\s+\$request_id;', keys) and re.search(r"default\s+\$cookie_attn_worker;", keys)
    cookie = conf[conf.index("map $cookie_attn_worker $attn_new_cookie") :]
    assert re.search(r'""\s+"attn_worker=\$request_id; Path=/', cookie)  # the same id the first request hashed
    assert "add_header Set-Cookie $attn_new_cookie always;" in conf
    servers = re.findall(r"^\s+server (\S+) max_fails=1 fail_timeout=10s;$", conf, re.M)
    assert servers == ["127.0.0.1:9001", "127.0.0.1:9002"]


def test_the_websocket_is_upgraded_unbuffered_with_long_timeouts():
    ws = location(site_conf(["h:1"], "80", "off"), "~ /_stcore/stream$")
    for line in (
        "proxy_http_version 1.1;",
        "proxy_set_header Upgrade $http_upgrade;",
        "proxy_set_header Connection $attn_connection;",
        "proxy_set_header Host $http_host;",
        "proxy_buffering off;",
        "proxy_read_timeout 1d;",
        "proxy_send_timeout 1d;",
    ):
        assert line in ws, line


@pytest.mark.parametrize("bad", ["", "host", "host:", "host:0", "host:70000", "a b:80", "h:80; ip_hash"])
def test_a_bad_upstream_is_refused(bad):
    with pytest.raises(ValueError):
        site_conf([bad], "80", "off")


def test_hosts_and_ipv6_upstreams_are_taken():
    assert check_upstream(" worker-1.dept.example:8501 ") == "worker-1.dept.example:8501"
    assert check_upstream("[::1]:8501") == "[::1]:8501"


def test_nginx_accepts_the_user_configuration(tmp_path):
    nginx = find_nginx()
    if nginx is None:
        pytest.skip("nginx is not installed: sudo apt-get install nginx")
    conf = write_user_conf(tmp_path, ["127.0.0.1:9001", "127.0.0.1:9002"], "127.0.0.1:9000")
    out = subprocess.run(
        [nginx, "-t", "-p", str(tmp_path), "-c", str(conf), "-e", str(tmp_path / "error.log")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert str(tmp_path) in conf.read_text()  # pid, logs and temporary files stay in the run directory
    assert "/var/" not in conf.read_text() + (tmp_path / "site.conf").read_text()


def test_the_deploy_guide_shows_exactly_the_rendered_department_configuration():
    text = DEPLOY.read_text(encoding="utf-8")
    section = text[text.index("## Other hosts and containers") :]
    block = re.search(r"```nginx\n(.*?)```", section, re.S).group(1)
    assert block == site_conf(UPSTREAMS, "80", "/var/log/nginx/attn_access.log")
    assert f'UPSTREAMS="{" ".join(UPSTREAMS)}"' in section
