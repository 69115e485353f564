"""Generate a PyTorch 2.x profiler (Kineto) trace with about N `python_function` events (with_stack), and its
ground truth, for benchmarks/run_python_frames.py (issue 21: a million Python frames).

The trace is what `torch.profiler.profile(activities=[CPU, CUDA], with_stack=True)` writes for a small GPT-like
training loop, in the shape of the real H100 trace of fixtures/pytorch_cuda (Kineto's own indented layout, `ts` /
`dur` in µs with ns fractions relative to `baseTimeNanoseconds`, `Python id` / `Python parent id` / `Python module
id` / `Ev Idx` args, frame names `file(line): function`, `<built-in ...>` and `nn.Module: <Class>_<n>`):

* the main thread: `<module>` -> `main` -> `train` (open for the whole trace, as the tracer records frames already
  on the stack), then per step `profiler.step()` (whose record_function starts `ProfilerStep#N` inside it: the step
  span overlaps the frames, as in real traces), the DataLoader's `__next__` (an `enumerate(DataLoader)#...`
  annotation, dataset and collate frames, CPU ops), `train_step`: host-to-device copies, the model's forward
  (nn.Module frames with `_call_impl`, `forward`, `torch.nn.functional` frames and the `<built-in ...>` C calls
  whose aten ops launch CUDA kernels), the loss, `backward` (its `run_backward` C call waits while the autograd
  thread runs the backward ops), the optimizer's `Optimizer.step#AdamW.step` with foreach kernels, `zero_grad`,
  `loss.item()` (a device-to-host copy and a stream sync) and, here and there, the helper chains of
  torch.cuda / torch._utils that nest 5-15 frames deep;
* the autograd thread (`pt_autograd_0`): `autograd::engine::evaluate_function: XBackward0` ops with kernels, no
  Python frames (as real traces);
* two Python threads besides main: the DataLoader's pin-memory thread (pin_memory ops, no kernels) and a metrics
  writer thread (queue waits and file writes), both open from before the trace starts.

Nesting depth runs from 0 to about 40 (a layer's Linear call is 20 frames deep, most frames 13-20 deep; some
helper chains below it reach 37 with the default seed). Every cpu_op that launches work carries an External id;
each launch is a `cudaLaunchKernel` runtime call (`correlation`), a kernel (or memcpy) on stream 7 with the same
External id and correlation, and an `ac2g` flow; forward ops carry Sequence numbers with `fwdbwd` flows to their
backward ops; each step has its `gpu_user_annotation` copy on the stream. Times are drawn from a seeded generator (deterministic for a seed).

The ground truth (written beside the trace as `<trace>.truth.json`) is computed while the frames are made, from
the frames' own parents (not by nesting times): the number of frames (by thread), the depth histogram, and per
call path of a thread (frames from the top level down, joined by ';') the calls, total and self ns (self: the
duration less the durations of the frames it called directly), the host ops whose innermost frame is on it and
the device ns those ops launched: the figures of profpipe's python_call_tree.

Usage: python benchmarks/scale_python_frames.py OUT.pt.trace.json --frames 1000000 [--seed 21]
"""
from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

BASE_NS = 1_790_857_026_000_000_000  # baseTimeNanoseconds: Kineto floors it to the second
START_NS = 4_658_289_678_232_364  # the first event, ns after baseTimeNanoseconds (the real trace's magnitude);
# every time below is ns after baseTimeNanoseconds
PID, MAIN, AUTOGRAD, PIN, WRITER, STREAM = 3117, 3117, 3163, 3160, 3161, 7
LAYERS = 12

GEMM = "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
KERNELS = {
    "gemm": GEMM,
    "gemm_bwd": GEMM.replace("_tn_n_", "_nn_n_"),
    "layer_norm": "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*, float const*, float const*, float*, float*, float*)",
    "layer_norm_bwd": "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<float, float>(float const*, float const*, float const*, float const*, float const*, float*, int)",
    "flash": "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, float, Flash_kernel_traits<64, 128, 128, 4, float> >, false, true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)",
    "flash_bwd": "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<64, 128, 128, 8, 2, 4, 2, false, false, float, Flash_kernel_traits<64, 128, 128, 8, float> >, true, false, false, false, false, true, false>(pytorch_flash::Flash_bwd_params)",
    "gelu": "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>)",
    "dropout": "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, unsigned int, 1, 4, bool>(at::cuda::detail::TensorInfo<float const, unsigned int>, at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, at::PhiloxCudaState)",
    "embedding": "void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<float const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)",
    "add": "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
    "log_softmax": "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)",
    "nll_loss": "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)",
    "foreach": "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float*, double, double, double, double, double, bool, float*, float*>(at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float*, double, double, double, double, double, bool, float*, float*)",
    "fill": "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)",
}
#: Helper chains of torch's Python code (as in the real trace), each a path of frames called one inside the other.
DEVICE_INDEX = ["torch/cuda/_utils.py(517): _get_device_index", "torch/_utils.py(847): _get_device_index",
                "torch/_utils.py(821): _get_current_device_index", "torch/_utils.py(805): _get_device_attr",
                "torch/_utils.py(788): _get_available_device_type", "torch/cuda/__init__.py(161): is_available",
                "torch/cuda/__init__.py(157): _nvml_based_avail", "<frozen os>(779): getenv",
                "<frozen _collections_abc>(804): get", "<frozen os>(680): __getitem__", "<frozen os>(762): encode",
                "<built-in method encode of str object at 0x7f49a7547130>"]
LAZY_INIT = ["torch/cuda/__init__.py(450): _lazy_init", "torch/cuda/__init__.py(401): is_initialized",
             "<built-in function _cuda_isInBadFork>"]
DISPATCH = ["torch/_ops.py(1079): __call__", "torch/_ops.py(1144): _must_dispatch_in_python",
            "torch/_ops.py(1145): <genexpr>", "torch/_ops.py(1130): _contains_fake_script_object",
            "torch/_library/fake_class_registry.py(41): is_opaque_type", "typing.py(392): inner",
            "typing.py(2154): cast", "<built-in function isinstance>"]
TRACING_STATE = ("<built-in method _get_tracing_state of pybind11_builtins.pybind11_detail_function_record_v1_system_"
                 "libstdcpp_gxx_abi_1xxx_use_cxx11_abi_1 object at 0x7f4a589a29b0>")
#: The backward op of each forward op that autograd records, and the kernel it launches ("gemm_bwd": two aten::mm).
BACKWARD = {"aten::addmm": ("AddmmBackward0", "gemm_bwd"),
            "aten::native_layer_norm": ("NativeLayerNormBackward0", "layer_norm_bwd"),
            "aten::_flash_attention_forward": ("ScaledDotProductFlashAttentionBackward0", "flash_bwd"),
            "aten::gelu": ("GeluBackward0", "gelu"), "aten::native_dropout": ("NativeDropoutBackward0", "dropout"),
            "aten::index_select": ("EmbeddingBackward0", "fill"), "aten::add": ("AddBackward0", "add"),
            "aten::_log_softmax": ("LogSoftmaxBackward0", "log_softmax"),
            "aten::nll_loss_forward": ("NllLossBackward0", "fill")}
CALL_IMPL = "torch/nn/modules/module.py(1783): _call_impl"
GETATTR = "torch/nn/modules/module.py(1955): __getattr__"


class Generator:
    """Builds the trace step by step (each thread in time order) and its ground truth; events are written out step by
    step."""

    def __init__(self, out, seed: int) -> None:
        self.out = out
        self.rng = random.Random(seed)
        self.python_id = self.external_id = self.sequence = self.ev_idx = 0
        # CUPTI counts correlation ids from the process start: a profile taken after warm-up steps starts far
        # from 0 (the real traces of HTA's tests: 135,071 and 815,091)
        self.correlation = 815_090
        self.pending: list[tuple[int, str]] = []  # (start ns, event text) of events not yet written
        self.written = 0
        self.now = {MAIN: START_NS, AUTOGRAD: START_NS, PIN: START_NS, WRITER: START_NS}
        self.stacks: dict[int, list[list]] = {MAIN: [], PIN: [], WRITER: []}
        self.stream_free = START_NS
        self.names: dict[str, str] = {}
        self.paths: dict[tuple[int, int, str], int] = {}  # (tid, parent path index (-1: none), name) -> path index
        self.path_info: list[tuple[int, int, str]] = []  # path index -> (tid, parent path index, name)
        self.stats: list[list[int]] = []  # path index -> [calls, total ns, self ns, self ops, device self ns]
        self.depths: dict[int, int] = {}
        self.frames_by_tid: dict[int, int] = {MAIN: 0, PIN: 0, WRITER: 0}
        self.backward: list[tuple[str, str | None, int]] = []  # forward ops to run backward: (name, kernel, seq)
        self.counts = {"cpu_op": 0, "user_annotation": 0, "cuda_runtime": 0, "kernel": 0, "gpu_memcpy": 0}
        self.steps = 0

    # ------------------------------------------------------------------------------------------- output
    @staticmethod
    def _us(ns: int) -> str:
        """ns (not negative) as Kineto's µs with three decimals, exactly."""
        return f"{ns // 1000}.{ns % 1000:03d}"

    def _quoted(self, name: str) -> str:
        text = self.names.get(name)
        if text is None:
            text = self.names[name] = json.dumps(name)
        return text

    def _emit(self, start: int, text: str) -> None:
        self.pending.append((start, text))

    def _x(self, cat: str, name: str, pid: int, tid: int, start: int, dur: int, args: str) -> None:
        self.ev_idx += 1
        self._emit(start, f'  {{\n    "ph": "X", "cat": "{cat}", "name": {self._quoted(name)}, "pid": {pid}, '
                          f'"tid": {tid},\n    "ts": {self._us(start)}, "dur": {self._us(dur)},\n    '
                          f'"args": {{\n      {args}\n    }}\n  }}')

    def flush(self) -> None:
        """Write the events made so far (a step's), in start order."""
        self.pending.sort(key=lambda item: item[0])
        for _, text in self.pending:
            self.out.write(",\n" if self.written else "")
            self.out.write(text)
            self.written += 1
        self.pending.clear()

    # ------------------------------------------------------------------------------------------- frames
    def enter(self, tid: int, name: str, module_id: int | None = None) -> None:
        self.now[tid] += self.rng.randint(80, 600)
        stack = self.stacks[tid]
        parent_path = stack[-1][4] if stack else -1
        key = (tid, parent_path, name)
        path = self.paths.get(key)
        if path is None:
            path = self.paths[key] = len(self.path_info)
            self.path_info.append((tid, parent_path, name))
            self.stats.append([0, 0, 0, 0, 0])
        self.python_id += 1
        # [python id, parent id, name, start, path, child ns, module id]
        stack.append([self.python_id, stack[-1][0] if stack else None, name, self.now[tid], path, 0, module_id])

    def leave(self, tid: int) -> None:
        self.now[tid] += self.rng.randint(50, 400)
        stack = self.stacks[tid]
        python_id, parent_id, name, start, path, child_ns, module_id = stack.pop()
        dur = self.now[tid] - start
        stats = self.stats[path]
        stats[0] += 1
        stats[1] += dur
        stats[2] += dur - child_ns
        if stack:
            stack[-1][5] += dur
        self.depths[len(stack)] = self.depths.get(len(stack), 0) + 1
        self.frames_by_tid[tid] += 1
        module = f', "Python module id": {module_id}' if module_id is not None else ""
        self.ev_idx += 1
        self._emit(start, f'  {{\n    "ph": "X", "cat": "python_function", "name": {self._quoted(name)}, '
                          f'"pid": {PID}, "tid": {tid},\n    "ts": {self._us(start)}, '
                          f'"dur": {self._us(dur)},\n    "args": {{\n      "Python parent id": '
                          f'{"null" if parent_id is None else parent_id}, "Python id": {python_id}{module}, '
                          f'"Ev Idx": {self.ev_idx}\n    }}\n  }}')

    def call(self, tid: int, name: str, body=None, own_ns: tuple[int, int] = (150, 1500)) -> None:
        """A frame: entered, `body` run inside it (or some own time), left."""
        self.enter(tid, name)
        if body is None:
            self.now[tid] += self.rng.randint(*own_ns)
        else:
            body()
        self.leave(tid)

    def chain(self, tid: int, names: list[str], depth: int | None = None) -> None:
        """The first `depth` frames of `names` (all by default), each called inside the one before."""
        names = names[:depth] if depth is not None else names
        for name in names:
            self.enter(tid, name)
        self.now[tid] += self.rng.randint(100, 2000)
        for _ in names:
            self.leave(tid)

    def helpers(self, tid: int) -> None:
        """Now and then one of torch's helper chains (most calls make none; a few go 20 frames deep)."""
        roll = self.rng.random()
        if roll < 0.01:
            self.chain(tid, DISPATCH[:4] + DEVICE_INDEX[:-1] + DISPATCH[4:], self.rng.randint(12, 19))
        elif roll < 0.06:
            self.chain(tid, DEVICE_INDEX, self.rng.randint(3, len(DEVICE_INDEX)))
        elif roll < 0.10:
            self.chain(tid, DISPATCH, self.rng.randint(2, len(DISPATCH)))
        elif roll < 0.16:
            self.chain(tid, LAZY_INIT)
        elif roll < 0.40:
            self.call(tid, "<built-in function isinstance>", own_ns=(80, 400))

    # ------------------------------------------------------------------------------------------- ops
    def _ops_seen(self, tid: int) -> None:
        """A host op starts now: it counts for the innermost open frame of its thread."""
        stack = self.stacks.get(tid)
        if stack:
            self.stats[stack[-1][4]][3] += 1

    def op(self, tid: int, name: str, children: tuple = (), kernel: str | None = None, memcpy: int = 0,
           forward: bool = False, sync: bool = False, backward_of: int | None = None) -> None:
        """A cpu_op and the ops nested in it ((name, children, kernel, ...) tuples); `kernel` launches a kernel,
        `memcpy` copies that many bytes host to device (device to host when negative), `sync` then waits for the
        stream; `forward` gives it a Sequence number and queues its backward op; `backward_of` is the Sequence
        number of the forward op this backward op is for (the end of its fwdbwd flow)."""
        self.now[tid] += self.rng.randint(800, 4000)
        start = self.now[tid]
        self._ops_seen(tid)
        self.external_id += 1
        external = self.external_id
        sequence = ""
        if forward or backward_of is not None:
            if forward:
                self.sequence += 1
                self.backward.append((name, kernel, self.sequence))
            number = self.sequence if forward else backward_of
            sequence = f', "Sequence number": {number}, "Fwd thread id": {0 if forward else 1}'
            ends = ', "bp": "e"' if backward_of is not None else ""
            self._emit(start, f'  {{\n    "ph": "{"f" if ends else "s"}", "id": {number}, "pid": {PID}, "tid": {tid}, '
                              f'"ts": {self._us(start)}, "cat": "fwdbwd", "name": "fwdbwd"{ends}\n  }}')
        for child in children:
            self.op(tid, *child)
        if kernel is not None or memcpy:
            self.launch(tid, external, kernel, memcpy)
        if sync:
            self.runtime(tid, "cudaStreamSynchronize", external)
            self.now[tid] = max(self.now[tid], self.stream_free + self.rng.randint(2000, 6000))
        self.now[tid] += self.rng.randint(500, 3000)
        self.counts["cpu_op"] += 1
        self._x("cpu_op", name, PID, tid, start, self.now[tid] - start,
                f'"External id": {external}, "Record function id": 0{sequence}, "Ev Idx": {self.ev_idx + 1}')

    def runtime(self, tid: int, name: str, external: int) -> tuple[int, int]:
        """A CUDA runtime call made in op `external`: (its start, its correlation id)."""
        self.now[tid] += self.rng.randint(300, 1500)
        start = self.now[tid]
        self.now[tid] += self.rng.randint(2500, 12000)
        self.counts["cuda_runtime"] += 1
        self.correlation += 1
        correlation = self.correlation
        self._x("cuda_runtime", name, PID, tid, start, self.now[tid] - start,
                f'"External id": {external}, "cbid": 211, "correlation": {correlation}')
        return start, correlation

    def launch(self, tid: int, external: int, kernel: str | None, memcpy: int) -> None:
        """A runtime call that launches a kernel (or copy) on the stream, with its flow; its device time counts for
        the innermost frame open on the launching thread."""
        start, correlation = self.runtime(tid, "cudaLaunchKernel" if kernel else "cudaMemcpyAsync", external)
        device_start = max(self.stream_free, start + self.rng.randint(4000, 9000)) + self.rng.randint(500, 2500)
        if kernel:
            dur = self.rng.randint(3000, 90000)
            self.counts["kernel"] += 1
            self._x("kernel", KERNELS[kernel], 0, STREAM, device_start, dur,
                    f'"External id": {external}, "queued": 0, "device": 0, "context": 1, "stream": {STREAM}, '
                    f'"correlation": {correlation}, "registers per thread": 128, "shared memory": 49152, '
                    f'"grid": [{self.rng.randint(1, 512)}, 1, 1], "block": [128, 1, 1]')
        else:
            dur = abs(memcpy) // 40000 + self.rng.randint(1000, 3000)  # about 40 GB/s
            self.counts["gpu_memcpy"] += 1
            kind = "HtoD (Pinned -> Device)" if memcpy > 0 else "DtoH (Device -> Pageable)"
            self._x("gpu_memcpy", f"Memcpy {kind}", 0, STREAM, device_start, dur,
                    f'"External id": {external}, "device": 0, "context": 1, "stream": {STREAM}, '
                    f'"correlation": {correlation}, "bytes": {abs(memcpy)}')
        self.stream_free = device_start + dur
        stack = self.stacks.get(tid)
        if stack:
            self.stats[stack[-1][4]][4] += dur
        for ph, pid, where, at in (("s", PID, tid, start), ("f", 0, STREAM, device_start)):
            bp = ', "bp": "e"' if ph == "f" else ""
            self._emit(at, f'  {{\n    "ph": "{ph}", "id": {correlation}, "pid": {pid}, "tid": {where}, '
                           f'"ts": {self._us(at)}, "cat": "ac2g", "name": "ac2g"{bp}\n  }}')

    def annotation(self, tid: int, name: str, start: int, end: int) -> None:
        self.external_id += 1
        self.counts["user_annotation"] += 1
        self._x("user_annotation", name, PID, tid, start, end - start,
                f'"External id": {self.external_id}, "Record function id": 0, "Ev Idx": {self.ev_idx + 1}')

    # ------------------------------------------------------------------------------------------- the model
    def module(self, tid: int, cls: str, index: int, forward: str, body, lookups: int = 0) -> None:
        """An nn.Module call as PyTorch 2.x traces it: `nn.Module: <Class>_<n>`, `_call_impl`, the tracing-state
        check and the module's forward, which looks up `lookups` parameters and submodules (Module.__getattr__)."""
        self.enter(tid, f"nn.Module: {cls}_{index}", module_id=index)
        self.enter(tid, CALL_IMPL)
        self.call(tid, TRACING_STATE, own_ns=(200, 900))
        self.enter(tid, forward)
        for _ in range(lookups):
            self.call(tid, GETATTR, own_ns=(300, 1500))
        body()
        self.leave(tid)
        self.leave(tid)
        self.leave(tid)

    def builtin(self, tid: int, name: str, op: tuple) -> None:
        """A C function called from Python (`<built-in ...>`) and the aten op(s) it runs."""
        self.enter(tid, name)
        self.op(tid, *op)
        self.leave(tid)

    def linear(self, index: int) -> None:
        def body() -> None:
            self.helpers(MAIN)
            self.builtin(MAIN, "<built-in function linear>",
                         ("aten::linear", (("aten::t", (("aten::transpose", (("aten::as_strided",),)),)),
                                           ("aten::addmm", (), "gemm", 0, True)), None))
        self.module(MAIN, "Linear", index, "torch/nn/modules/linear.py(125): forward", body, 2)

    def layer_norm(self, index: int) -> None:
        def body() -> None:
            def functional() -> None:
                self.helpers(MAIN)
                self.builtin(MAIN, "<built-in method layer_norm of type object at 0x7f4a0173e180>",
                             ("aten::layer_norm", (("aten::native_layer_norm", (), "layer_norm", 0, True),)))
            self.call(MAIN, "torch/nn/functional.py(2901): layer_norm", functional)
        self.module(MAIN, "LayerNorm", index, "torch/nn/modules/normalization.py(217): forward", body, 2)

    def dropout(self, index: int) -> None:
        def body() -> None:
            def functional() -> None:
                self.call(MAIN, "<built-in function _has_torch_function_unary>", own_ns=(100, 500))
                self.builtin(MAIN, "<built-in method dropout of type object at 0x7f4a0173e180>",
                             ("aten::dropout", (("aten::native_dropout", (), "dropout", 0, True),)))
            self.call(MAIN, "torch/nn/functional.py(1425): dropout", functional)
        self.module(MAIN, "Dropout", index, "torch/nn/modules/dropout.py(70): forward", body)

    def attention(self, layer: int) -> None:
        def body() -> None:
            self.call(MAIN, "<built-in method size of Tensor object at 0x7f4768404a00>", own_ns=(200, 700))
            self.linear(4 * layer)
            self.builtin(MAIN, "<built-in method split of Tensor object at 0x7f4768404a00>",
                         ("aten::split", (("aten::narrow", (("aten::slice", (("aten::as_strided",),)),)),) * 3))
            for _ in range(3):
                self.builtin(MAIN, "<built-in method view of Tensor object at 0x7f4768404a00>", ("aten::view",))
                self.builtin(MAIN, "<built-in method transpose of Tensor object at 0x7f4768404a00>",
                             ("aten::transpose", (("aten::as_strided",),)))
            self.builtin(MAIN, "<built-in function scaled_dot_product_attention>",
                         ("aten::scaled_dot_product_attention",
                          (("aten::_scaled_dot_product_flash_attention", (("aten::_flash_attention_forward", (),
                                                                           "flash", 0, True),)),)))
            self.linear(4 * layer + 1)
            self.dropout(2 * layer)
        self.module(MAIN, "CausalSelfAttention", layer, "model.py(48): forward", body, 3)

    def mlp(self, layer: int) -> None:
        def body() -> None:
            self.linear(4 * layer + 2)

            def gelu() -> None:
                self.builtin(MAIN, "<built-in function gelu>", ("aten::gelu", (), "gelu", 0, True))
            self.module(MAIN, "GELU", layer, "torch/nn/modules/activation.py(734): forward", gelu)
            self.linear(4 * layer + 3)
            self.dropout(2 * layer + 1)
        self.module(MAIN, "MLP", layer, "model.py(79): forward", body, 4)

    def block(self, layer: int) -> None:
        def body() -> None:
            self.layer_norm(2 * layer)
            self.attention(layer)
            self.builtin(MAIN, "<built-in method add of Tensor object at 0x7f4768404a00>",
                         ("aten::add", (), "add", 0, True))
            self.layer_norm(2 * layer + 1)
            self.mlp(layer)
            self.builtin(MAIN, "<built-in method add of Tensor object at 0x7f4768404a00>",
                         ("aten::add", (), "add", 0, True))
        self.module(MAIN, "Block", layer, "model.py(101): forward", body, 4)

    def forward(self) -> None:
        def body() -> None:
            def embedding() -> None:
                def functional() -> None:
                    self.builtin(MAIN, "<built-in method embedding of type object at 0x7f4a0173e180>",
                                 ("aten::embedding", (("aten::index_select", (), "embedding", 0, True),)))
                self.call(MAIN, "torch/nn/functional.py(2515): embedding", functional)
            self.module(MAIN, "Embedding", 0, "torch/nn/modules/sparse.py(189): forward", embedding, 1)
            self.dropout(2 * LAYERS)

            def blocks() -> None:
                self.call(MAIN, "torch/nn/modules/container.py(240): __iter__",
                          lambda: self.call(MAIN, "<built-in function iter>", own_ns=(200, 600)))
                for layer in range(LAYERS):
                    self.block(layer)
            self.module(MAIN, "Sequential", 0, "torch/nn/modules/container.py(248): forward", blocks)
            self.layer_norm(2 * LAYERS)
            self.linear(4 * LAYERS)
        self.module(MAIN, "GPT", 0, "model.py(160): forward", body, 5)

    # ------------------------------------------------------------------------------------------- a step
    def close_span(self, span: tuple[int, str] | None) -> None:
        """record_function's `__exit__`: the ProfilerStep#N span `span` (start, name) ends inside its frames."""
        def ops() -> None:
            if span is not None:
                self.now[MAIN] += self.rng.randint(500, 2000)
                self.annotation(MAIN, span[1], span[0], self.now[MAIN])
            self.now[MAIN] += self.rng.randint(200, 900)

        def body() -> None:
            self.call(MAIN, "torch/_jit_internal.py(103): is_scripting", own_ns=(80, 300))
            self.call(MAIN, "torch/_ops.py(1079): __call__", ops)
        self.call(MAIN, "torch/autograd/profiler.py(860): __exit__", body)

    def profiler_step(self, step: int, previous: tuple[int, str] | None) -> tuple[int, str]:
        """`prof.step()`: it ends the previous ProfilerStep#N span and starts the next one, both inside its frames
        (so the spans overlap the frames, as in real traces); returns (start, name) of the span it opened."""
        opened: list[int] = []

        def body() -> None:
            self.close_span(previous)
            self.call(MAIN, "torch/profiler/profiler.py(525): schedule_fn", own_ns=(500, 4000))
            self.call(MAIN, "torch/profiler/profiler.py(924): _transit_action",
                      lambda: self.call(MAIN, "enum.py(1267): __hash__", own_ns=(200, 2000)))
            self.call(MAIN, "torch/autograd/profiler.py(841): __init__",
                      lambda: self.call(MAIN, "typing.py(392): inner", own_ns=(300, 2000)))

            def enter_span() -> None:
                def ops() -> None:
                    self.now[MAIN] += self.rng.randint(2000, 9000)
                    opened.append(self.now[MAIN])
                    self._ops_seen(MAIN)
                self.call(MAIN, "torch/_ops.py(1257): __call__", ops)
            self.call(MAIN, "torch/autograd/profiler.py(854): __enter__", enter_span)
        self.call(MAIN, "torch/profiler/profiler.py(884): step", body)
        return opened[0], f"ProfilerStep#{step}"

    def next_batch(self) -> None:
        """The DataLoader's `__next__` (an annotation over it), dataset items and collate on CPU."""
        def body() -> None:
            def next_data() -> None:
                def fetch() -> None:
                    for _ in range(8):
                        def item() -> None:
                            self.builtin(MAIN, "<built-in method randint of type object at 0x7f4a0173e180>",
                                         ("aten::randint", (("aten::random_",),)))
                        self.call(MAIN, "data.py(41): __getitem__", item)
                    self.call(MAIN, "torch/utils/data/_utils/fetch.py(54): <listcomp>", own_ns=(500, 2000))

                    def collate() -> None:
                        def inner() -> None:
                            self.call(MAIN, "<built-in function isinstance>", own_ns=(80, 300))
                            self.builtin(MAIN, "<built-in method stack of type object at 0x7f4a0173e180>",
                                         ("aten::stack", (("aten::cat",),)))
                        self.call(MAIN, "torch/utils/data/_utils/collate.py(155): collate", inner)
                    self.call(MAIN, "torch/utils/data/_utils/collate.py(316): default_collate", collate)
                self.call(MAIN, "torch/utils/data/_utils/fetch.py(46): fetch", fetch)
                self.call(MAIN, "torch/utils/data/dataloader.py(680): _next_index", own_ns=(500, 3000))
            self.call(MAIN, "torch/utils/data/dataloader.py(787): _next_data", next_data)
            self.call(MAIN, "torch/profiler/profiler.py(735): _get_distributed_info", own_ns=(200, 900))
        self.enter(MAIN, "torch/utils/data/dataloader.py(727): __next__")
        self.now[MAIN] += self.rng.randint(100, 400)
        start = self.now[MAIN]
        self._ops_seen(MAIN)
        body()
        end = self.now[MAIN] + self.rng.randint(100, 500)
        self.annotation(MAIN, "enumerate(DataLoader)#_SingleProcessDataLoader.__next__", start, end)
        self.now[MAIN] = end
        self.leave(MAIN)

    def backward_pass(self) -> None:
        """`loss.backward()`: its `run_backward` C call waits while the autograd thread runs each queued forward op's
        backward (in reverse), launching kernels."""
        def run() -> None:
            def engine() -> None:
                self.now[MAIN] += self.rng.randint(2000, 5000)
                self.now[AUTOGRAD] = max(self.now[AUTOGRAD], self.now[MAIN])
                while self.backward:
                    name, _, sequence = self.backward.pop()
                    grad, grad_kernel = BACKWARD[name]
                    inner = (("aten::mm", (), grad_kernel),) * 2 if grad_kernel == "gemm_bwd" else ()
                    self.now[AUTOGRAD] += self.rng.randint(1000, 3000)
                    self.op(AUTOGRAD, f"autograd::engine::evaluate_function: {grad}",
                            ((grad, inner, None if inner else grad_kernel, 0, False, False, sequence),))
                self.now[MAIN] = max(self.now[MAIN], self.now[AUTOGRAD]) + self.rng.randint(2000, 8000)
            self.call(MAIN, "<built-in method run_backward of torch._C._EngineBase object at 0x7f4a2c1e5f50>", engine)
        self.call(MAIN, "torch/_tensor.py(626): backward",
                  lambda: self.call(MAIN, "torch/autograd/__init__.py(347): backward",
                                    lambda: self.call(MAIN, "torch/autograd/graph.py(829): _engine_run_backward", run)))

    def optimizer(self) -> None:
        def step_body() -> None:
            start = self.now[MAIN] + self.rng.randint(300, 900)
            self.now[MAIN] = start
            self._ops_seen(MAIN)

            def adamw() -> None:
                def multi() -> None:
                    for group in range(4):
                        self.helpers(MAIN)
                        self.builtin(MAIN, "<built-in function _fused_adamw_>",
                                     ("aten::_fused_adamw_", (), "foreach", 0))
                self.call(MAIN, "torch/optim/adamw.py(343): _fused_adamw", multi)
            self.call(MAIN, "torch/optim/adamw.py(209): step",
                      lambda: self.call(MAIN, "torch/optim/optimizer.py(79): _use_grad", adamw))
            end = self.now[MAIN] + self.rng.randint(300, 900)
            self.annotation(MAIN, "Optimizer.step#AdamW.step", start, end)
            self.now[MAIN] = end
        self.call(MAIN, "torch/optim/optimizer.py(485): wrapper", step_body)

        def zero_body() -> None:
            start = self.now[MAIN] + self.rng.randint(300, 900)
            self.now[MAIN] = start
            self._ops_seen(MAIN)
            for _ in range(self.rng.randint(2, 6)):
                self.call(MAIN, "torch/optim/optimizer.py(1011): <genexpr>", own_ns=(200, 800))
            end = self.now[MAIN] + self.rng.randint(300, 900)
            self.annotation(MAIN, "Optimizer.zero_grad#AdamW.zero_grad", start, end)
            self.now[MAIN] = end
        self.call(MAIN, "torch/_compile.py(51): inner",
                  lambda: self.call(MAIN, "torch/optim/optimizer.py(990): zero_grad", zero_body))

    def train_step(self) -> None:
        def body() -> None:
            for size in (4 * 1024 * 1024, 64 * 1024):
                self.builtin(MAIN, "<built-in method to of Tensor object at 0x7f4768404a00>",
                             ("aten::to", (("aten::_to_copy", (("aten::empty_strided",),
                                                               ("aten::copy_", (), None, size))),)))
            self.forward()

            def loss() -> None:
                self.call(MAIN, "<built-in function _has_torch_function_variadic>", own_ns=(100, 400))
                self.builtin(MAIN, "<built-in function cross_entropy_loss>",
                             ("aten::cross_entropy_loss",
                              (("aten::log_softmax", (("aten::_log_softmax", (), "log_softmax", 0, True),)),
                               ("aten::nll_loss_nd", (("aten::nll_loss", (("aten::nll_loss_forward", (), "nll_loss",
                                                                           0, True),)),)))))
            self.call(MAIN, "torch/nn/functional.py(3462): cross_entropy", loss)
            self.backward_pass()
            self.optimizer()
            self.helpers(MAIN)
            self.builtin(MAIN, "<built-in method item of Tensor object at 0x7f4768404a00>",
                         ("aten::item", (("aten::_local_scalar_dense", (), None, -4, False, True),)))
        self.call(MAIN, "train.py(95): train_step", body)

    def side_threads(self, until: int) -> None:
        """The pin-memory and writer threads' work of one step, up to time `until`."""
        def pin() -> None:
            def one_step() -> None:
                self.chain(PIN, ["torch/multiprocessing/queue.py(29): get", "multiprocessing/queues.py(113): get",
                                 "<built-in method poll of _multiprocessing.Connection>"])

                def pin_batch() -> None:
                    for _ in range(2):
                        self.builtin(PIN, "<built-in method pin_memory of Tensor object at 0x7f4768404a00>",
                                     ("aten::pin_memory", (("aten::_pin_memory", (("aten::empty_strided",),
                                                                                  ("aten::copy_",))),)))
                self.call(PIN, "torch/utils/data/_utils/pin_memory.py(64): pin_memory", pin_batch)
                self.chain(PIN, ["queue.py(122): put", "threading.py(394): notify",
                                 "threading.py(299): _is_owned"])
            self.call(PIN, "torch/utils/data/_utils/pin_memory.py(30): do_one_step", one_step)

        def write() -> None:
            self.chain(WRITER, ["queue.py(154): get", "threading.py(331): wait",
                                "<built-in method acquire of _thread.lock object at 0x7f49a75fbe40>"])
            self.chain(WRITER, ["tensorboard/summary/writer/event_file_writer.py(233): _run",
                                "tensorboard/summary/writer/record_writer.py(40): write",
                                "<built-in method write of _io.BufferedWriter object at 0x7f49a6382c40>"])
        for tid, work in ((PIN, pin), (WRITER, write)):
            self.now[tid] = max(self.now[tid], until - self.rng.randint(2_000_000, 4_000_000))
            work()

    def run(self, frames: int) -> None:
        for tid, names in ((MAIN, ["train.py(212): <module>", "train.py(180): main", "train.py(120): train"]),
                           (PIN, ["threading.py(1012): _bootstrap", "threading.py(1075): _bootstrap_inner",
                                  "threading.py(1012): run", "torch/utils/data/_utils/pin_memory.py(52): "
                                                              "_pin_memory_loop"]),
                           (WRITER, ["threading.py(1012): _bootstrap", "threading.py(1075): _bootstrap_inner",
                                     "tensorboard/summary/writer/event_file_writer.py(244): run"])):
            for name in names:  # open before the trace started: the tracer starts them with it
                self.enter(tid, name)
        self.now = {tid: START_NS + 50_000 for tid in self.now}
        step, span = 0, None
        while sum(self.frames_by_tid.values()) < frames:
            step += 1
            step_start = self.now[MAIN]
            span = self.profiler_step(step, span)
            self.next_batch()
            self.train_step()
            gpu_start = max(step_start, span[0])
            self._x("gpu_user_annotation", span[1], 0, STREAM, gpu_start + 3000,
                    max(self.stream_free, gpu_start + 6000) - gpu_start - 3000,
                    f'"External id": {self.external_id}')
            self.side_threads(self.now[MAIN])
            self.flush()
        self.call(MAIN, "torch/profiler/profiler.py(826): __exit__",
                  lambda: self.call(MAIN, "torch/profiler/profiler.py(840): stop", lambda: self.close_span(span)))
        end = max(self.now.values()) + 10_000
        for tid in (MAIN, PIN, WRITER):  # still open when the trace stopped: the tracer ends them with it
            self.now[tid] = end
            while self.stacks[tid]:
                self.leave(tid)
        self.flush()
        self.steps = step

    def truth(self) -> dict:
        """The ground truth: frame counts, depths and the figures of every call path of a thread."""
        names: list[str] = []
        for tid, parent, name in self.path_info:
            names.append(name if parent < 0 else f"{names[parent]};{name}")
        paths = [[self.path_info[i][0], names[i], *self.stats[i]] for i in range(len(names)) if self.stats[i][0]]
        return {"frames": sum(self.frames_by_tid.values()), "frames_by_tid": self.frames_by_tid,
                "steps": self.steps, "events": self.written, "counts": self.counts,
                "depths": dict(sorted(self.depths.items())), "max_depth": max(self.depths),
                "path_columns": ["tid", "call_path", "calls", "total_ns", "self_ns", "self_ops", "device_self_ns"],
                "paths": paths}


def generate(target: Path, frames: int, seed: int = 21) -> dict:
    """Write the trace (through a .partial file, then renamed) and its ground truth beside it; return the truth."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    with open(partial, "w") as out:
        out.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    {\n      "id": 0, "name": "NVIDIA H100 80GB '
                  'HBM3", "totalGlobalMem": 85017493504,\n      "computeMajor": 9, "computeMinor": 0,\n      '
                  '"maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,\n      "regsPerBlock": 65536, '
                  '"warpSize": 32,\n      "sharedMemPerBlock": 49152, "numSms": 132\n    }\n  ],\n  "with_stack": 1,'
                  '\n  "record_shapes": 0,\n  "cuda_runtime_version": 12080,\n  "cupti_version": 26,\n  '
                  f'"displayTimeUnit": "ms",\n  "baseTimeNanoseconds": {BASE_NS},\n  "traceEvents": [\n')
        generator = Generator(out, seed)
        generator.run(frames)
        out.write(f'\n  ],\n  "traceName": "{target.name}"\n}}\n')
    truth = generator.truth()
    Path(str(target) + ".truth.json").write_text(json.dumps(truth))
    partial.rename(target)
    return truth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", type=Path)
    parser.add_argument("--frames", type=int, default=1_000_000, help="python_function events (at least)")
    parser.add_argument("--seed", type=int, default=21)
    args = parser.parse_args()
    truth = generate(args.target, args.frames, args.seed)
    print(json.dumps({k: v for k, v in truth.items() if k != "paths"} | {"paths": len(truth["paths"])}))


if __name__ == "__main__":
    main()
