"""The peer: MindSpore's own offline analysis of a CPU profiler folder (run with MindSpore installed).

Runs what `Profiler.analyse()` runs on the CPU platform: its FRAMEWORK parser (reads
cpu_op_execute_timestamp_N.txt) and its timeline writer (ASCEND_PROFILER_OUTPUT/trace_view.json),
on an `*_ascend_ms` folder. MindSpore writes into that folder, so the runner hands it a copy.

Usage: python peer_mindspore_cpu.py ASCEND_MS_DIR
"""
import os
import sys

from mindspore.profiler.common.constant import ProfilerActivity
from mindspore.profiler.common.log import ProfilerLogger
from mindspore.profiler.platform.cpu_profiler import CPUProfilerAnalysis


def main(ascend_ms_dir: str) -> None:
    ascend_ms_dir = os.path.abspath(ascend_ms_dir)
    output = os.path.join(ascend_ms_dir, "ASCEND_PROFILER_OUTPUT")
    os.makedirs(output, exist_ok=True)
    ProfilerLogger.init(ascend_ms_dir)
    CPUProfilerAnalysis._run_tasks(  # pylint: disable=protected-access
        ascend_ms_dir=ascend_ms_dir, framework_path=os.path.join(ascend_ms_dir, "FRAMEWORK"),
        ascend_profiler_output_path=output, rank_id=0, device_id=0, device_target="CPU",
        activities=[ProfilerActivity.CPU.value], step_list=None, data_simplification=True, pretty=False,
        export_type=["text"], mode="sync")
    if not os.path.exists(os.path.join(output, "trace_view.json")):
        raise SystemExit("MindSpore wrote no trace_view.json")


if __name__ == "__main__":
    main(sys.argv[1])
