"""Host-side elimination schedules of the GPU strategies, NumPy and Numba only.

The multi-morphology strategies (``levels``, ``fine``, ``dhs``) are planned by the functions
exported here; the shared-structure kernels by :mod:`.tiled` (``tiled``, ``grouped``) and
:mod:`.factors` (``block-shared`` with ``keep="factors"``). Their steps come from one list
scheduler (:mod:`.list_scheduling`) and node depths from
:func:`hinesbatch.tree.branches.node_depths`.

Each planner turns a batch into flat int32 arrays that a GPU kernel walks: which thread
eliminates which nodes, in which phase or step, and where every value lives. The format is
documented in ``FORMAT.md`` beside this file; the tests' CPU emulator runs every schedule
exactly as the kernels will.

Planning is done once per distinct cell shape (:func:`cell_shapes`) and replicated.
"""
from .branch_schedule import BranchSchedule
from .checks import check_branch_schedule, check_dhs_schedule
from .dhs import THREAD_CHOICES, DHSSchedule, choose_threads, dhs_schedule, dhs_steps
from .fine import fine_schedule, pack_cells
from .levels import level_schedule
from .metrics import branch_metrics
from .program import BranchProgram, branch_program, working_trees
from .shapes import CellShapes, cell_shapes

__all__ = [
    "BranchSchedule", "level_schedule", "fine_schedule", "pack_cells", "branch_metrics",
    "DHSSchedule", "dhs_schedule", "dhs_steps", "choose_threads", "THREAD_CHOICES",
    "check_branch_schedule", "check_dhs_schedule",
    "CellShapes", "cell_shapes", "BranchProgram", "branch_program", "working_trees",
]
