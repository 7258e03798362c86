"""Run a hinesbatch CLI command with the GPU engine's v, d and rhs forced into device memory
when ``HB_STATE_MEMORY=device`` (docs/decisions/021-gpu-state-memory.md measures both paths
this way); otherwise the engine's own rule decides.

    python scripts/gpu-state-memory-ab.py bench sim --part gpu --workloads batch --no-jaxley
    HB_STATE_MEMORY=device python scripts/gpu-state-memory-ab.py bench sim --part gpu ...
"""
import os
import sys

from hinesbatch.cli import main
from hinesbatch.engine.gpu.devices import CupyDevice

if os.environ.get("HB_STATE_MEMORY") == "device":
    CupyDevice.state_in_shared = lambda self, kernel, threads, shared: False

sys.exit(main(sys.argv[1:]))
