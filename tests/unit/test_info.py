"""`hinesbatch info` reports versions, backends and the GPU state with a reason."""
import json
import sys
import types

import pytest

from hinesbatch import cli, info
from hinesbatch.solvers.gpu import device


def test_info_json_lists_backends_and_gpu_state(capsys):
    assert cli.main(["info", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["versions"]["numpy"]
    assert report["backends"]["hines"]["serial"] == "available"
    assert report["backends"]["hines"]["multicore"] == "available"
    gpu = report["gpu"]
    assert isinstance(gpu["found"], bool)
    if not gpu["found"]:
        assert gpu["reason"], "a missing GPU must come with its cause"


def test_info_text_says_why_no_gpu(capsys, monkeypatch):
    monkeypatch.setattr(info, "gpu_status", lambda: {"found": False, "reason": "test reason"})
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert "GPU: none found (test reason)" in out
    assert "serial" in out


def test_gpu_status_without_cupy_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` raise ImportError
    status = info.gpu_status()
    assert status == {"found": False, "reason": status["reason"]}
    assert "CuPy is not installed" in status["reason"] and "hinesbatch[gpu]" in status["reason"]


def test_gpu_status_reports_driver_errors(monkeypatch):
    class FakeRuntime:
        @staticmethod
        def getDeviceCount():
            raise RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient")

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=FakeRuntime))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(device, "nvidia_driver_found", lambda: True)  # an old driver
    status = info.gpu_status()
    assert not status["found"]
    assert "CUDA driver error" in status["reason"] and "insufficient" in status["reason"]


def test_no_driver_at_all_is_not_called_an_old_driver(monkeypatch):
    """Without any NVIDIA driver, CUDA reports cudaErrorInsufficientDriver; info and the gpu
    backend say that no driver was found instead of sending people to upgrade it."""
    class FakeRuntime:
        @staticmethod
        def getDeviceCount():
            raise RuntimeError("cudaErrorInsufficientDriver: CUDA driver version is "
                               "insufficient for CUDA runtime version")

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=FakeRuntime),
                                 __version__="13.0.0")
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(device.os.path, "exists", lambda path: False)
    monkeypatch.setattr(device.ctypes.util, "find_library", lambda name: None)
    assert not device.nvidia_driver_found()
    status = info.gpu_status()
    assert status == {"found": False, "reason": device.NO_DRIVER}
    assert "no NVIDIA driver found" in status["reason"]
    device.availability.cache_clear()
    try:
        ok, why = device.availability()
        assert not ok and why.startswith("no NVIDIA driver found") and "insufficient" not in why
    finally:
        device.availability.cache_clear()


def test_a_driver_is_found_by_its_proc_file_or_library(monkeypatch):
    monkeypatch.setattr(device.os.path, "exists",
                        lambda path: path == "/proc/driver/nvidia/version")
    monkeypatch.setattr(device.ctypes.util, "find_library", lambda name: None)
    assert device.nvidia_driver_found()
    monkeypatch.setattr(device.os.path, "exists", lambda path: False)
    monkeypatch.setattr(device.ctypes.util, "find_library",
                        lambda name: "libcuda.so.1" if name == "cuda" else None)
    assert device.nvidia_driver_found()


@pytest.mark.parametrize("argv", [["bench"], ["frobnicate"]])
def test_cli_rejects_incomplete_or_unknown_commands(argv):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2


def test_a_command_whose_module_fails_to_import_does_not_break_the_others(monkeypatch, capsys):
    real_import = cli.importlib.import_module

    def fake_import(name):
        if name == "hinesbatch.bench.cpu":
            raise ImportError("simulated missing dependency")
        return real_import(name)

    monkeypatch.setattr(cli.importlib, "import_module", fake_import)
    assert cli.main(["info", "--json"]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        cli.main(["bench", "cpu", "--quick"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "'cpu' is unavailable" in err and "simulated missing dependency" in err
