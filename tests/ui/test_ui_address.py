"""Where the live view listens, and the one-line errors when it cannot: a port in use,
an address that is not one, no run at the path given."""

from __future__ import annotations

import socket

import pytest

from cep.ui import DEFAULT_HOST, UiError, parse_ui_address, serve_run, ui_command


@pytest.mark.parametrize(("text", "address"), [
    ("8650", ("127.0.0.1", 8650)),
    ("0.0.0.0:9000", ("0.0.0.0", 9000)),
    ("localhost:0", ("localhost", 0)),
    (":8080", ("127.0.0.1", 8080)),
    ("[::1]:8650", ("::1", 8650)),
])
def test_ui_addresses(text, address):
    assert parse_ui_address(text) == address
    assert DEFAULT_HOST == "127.0.0.1"


@pytest.mark.parametrize("text", ["http", "host:port", "70000", "-1", "::1:80", ""])
def test_bad_ui_addresses_are_one_line_errors(text):
    with pytest.raises(UiError) as refused:
        parse_ui_address(text)
    assert "\n" not in str(refused.value) and "PORT" in str(refused.value)


def test_a_port_in_use_is_one_clear_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(UiError) as refused:
            serve_run(tmp_path, "127.0.0.1", port)
        with pytest.raises(UiError):
            ui_command(tmp_path, "127.0.0.1", port)
    message = str(refused.value)
    assert message == (f"the live view's port {port} on 127.0.0.1 is in use: pick another "
                       "(--ui [HOST:]PORT, cep ui --port PORT; 0 picks a free one)")


def test_no_run_at_the_path_is_one_line(tmp_path):
    with pytest.raises(UiError, match=r"^no run at .*missing: give a run's --checkpoint "
                       r"directory or its --metrics file$"):
        serve_run(tmp_path / "missing", "127.0.0.1", 0)


def test_a_server_without_a_run_yet_answers_and_attaches_one_later(tmp_path):
    """cep run --ui binds before Spark starts; the run directory comes next."""
    import json
    import urllib.request

    with serve_run(None, "127.0.0.1", 0) as server:
        state = json.loads(urllib.request.urlopen(server.url + "api/state").read())
        assert state["run"]["kind"] == "starting" and state["last_batch"] is None
        server.attach(tmp_path)
        state = json.loads(urllib.request.urlopen(server.url + "api/state").read())
        assert state["run"] == {"path": str(tmp_path), "kind": "run directory",
                                "manifest": {}}
        assert 0 < server.cpu_s < 5, "the server counts what answering cost"


def test_live_view_for_cep_run_binds_first_prints_its_address_and_serves_the_run_dir(
        tmp_path, capsys):
    import json
    import re
    import urllib.request

    from cep.ui import live_view

    with live_view(None) as nothing:
        assert nothing is None, "no --ui: no server"
    with live_view("127.0.0.1:0") as on_workdir:
        [line] = capsys.readouterr().err.splitlines()
        url = re.fullmatch(r"cep: live view at (http://127\.0\.0\.1:\d+/)", line)[1]
        on_workdir(tmp_path)  # what run_on_spark does once the run directory exists
        state = json.loads(urllib.request.urlopen(url + "api/state").read())
        assert state["run"]["path"] == str(tmp_path)
    with pytest.raises(UiError), live_view("not-a-port"):
        pass
