"""Collective failures in the words of the programs that print them, read as 40 (14 for the NVSwitch fabric),
built from those programs' own sources; harmless lines of healthy multi-GPU runs stay harmless.

The facts are the programs': NCCL's WARN texts (src/misc/socket.cc, src/bootstrap.cc, src/init.cc,
src/transport.cc, src/transport/net_ib/*.cc at NVIDIA/nccl 5067397c2676d5aed50042fc39e5c8ee96eb0027;
src/include/socket.h and src/transport/p2p.cc at 7c72dee660e4d055b81721dd6b03e4e1c0a983cf, NCCL 2.4.8),
Horovod's (horovod/common/ops/nccl_operations.cc, stall_inspector.cc, common.h at horovod/horovod
2626dc87a3a8eb8fb7d2216198ce45bce0f9e65a), Gloo's (gloo/transport/tcp/pair.cc and unbound_buffer.cc at
facebookincubator/gloo cc441984208d0b54b4fc614301f41e82e951e5cd), TensorFlow's collective parameter resolver
(tensorflow/core/common_runtime/collective_param_resolver_local.cc at
d75edc93bfaf83aacbac4d25d0161141c7c928b0)
and coordination service (xla/tsl/distributed_runtime/coordination/coordination_service.cc at
4c7092b7693922fb11fcf1f183ed4dca1566fa23), CUDA's simpleP2P sample (NVIDIA/cuda-samples
c94ff366aed18c797b8a85dfaac7817b0228b420) and DCGM's failure messages (dcgmlib/dcgm_errors.h,
modules/health/DcgmHealthWatch.cpp at NVIDIA/DCGM 72fa3feaa67d716a75323a8f47c34ff3ee73f824), Open MPI's TCP
transport help texts (opal/mca/btl/tcp/help-mpi-btl-tcp.txt at open-mpi/ompi
8efebee745e15516a7f5f1f295df86c78014c76c).
The lines below are NOT copied from threads: each fills one message's format string in the way its printer
shows it (NCCL's "host:pid:tid [dev] file:line" prefix or PyTorch's "Last error:" relay, Gloo's "[file:line]"
prefix, TensorFlow's errors_impl exceptions). Every one of them read as nothing (0) before these signatures.
The real lines from public threads are in tests/fixtures/logs/real_lines.yaml.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tfdist_validate.diagnose import diagnose

COLLECTIVE = [
    # NCCL 2.0-2.2 printed WARN without the word NCCL; pasted without the host prefix too
    "node7:1201:1290 [2] transport/net_ib.cu:392 WARN NET/IB : Got async event : local work"
    " queue catastrophic error",
    "include/socket.h:360 WARN Connect to 10.1.1.2<41255> failed : No route to host",
    # NCCL's WARN bodies as PyTorch relays them after "Last error:" (ncclGetLastError)
    "Last error:\nBootstrap : no socket interface found",
    "Last error:\nNET/Socket : No usable listening interface found",
    "Last error:\nNET/IB : No IP interface found.",
    "Last error:\nNet : error encountered when getting address info : Name or service not known",
    "Last error:\nNet : No interface found in the same subnet as remote address 192.168.1.10<23456>",
    "Last error:\nMismatched NCCL version detected : rank 3 version 21903 rank 0 version 22105",
    "Last error:\nMultiple Ranks are using the same GPU/Partition. Set"
    " NCCL_MULTI_RANK_GPU_ENABLE=1 to enable this",
    "Last error:\nNo transport found for rank 0[41000] -> rank 1[61000]",
    "Last error:\nRank 0 has no transport for recv peer 5 on channel 0/2",
    "Last error:\nfailed to peer with device 1(=61000): 1 invalid argument",
    "Last error:\nfailed to open CUDA IPC handle : 1 invalid argument",
    "Last error:\nrank 0 failed to get CUDA IPC handle to device 1(=1) : 999 unknown error",
    "Last error:\ncudaIpcGetMemHandle failed : invalid argument",
    "Last error:\ncommunicator encountered a fatal error (detected in ncclIbIsend)",
    "Last error:\nCall to ibv_reg_mr failed with error Cannot allocate memory",
    "Last error:\nCall to ibv_create_qp failed with error Cannot allocate memory errno 12",
    "Last error:\nsocketProgress: Connection closed by remote peer node2<42830>",
    "Last error:\nsocketStartConnect: exceeded retries (20000)",
    "Last error:\nNET/IB: Got completion from peer 10.0.0.2<42384> with status=12 opcode=0"
    " len=0 vendor err 129 (Recv)",
    # Horovod's NCCL call failures (the call's name, then ncclGetErrorString's text)
    "tensorflow.python.framework.errors_impl.UnknownError: ncclGroupEnd failed: invalid usage",
    "RuntimeError: NCCL async error: invalid usage",
    # Horovod's stall inspector and shutdown status
    'One or more rank (marked by "!") is stalled for longer than 60 seconds. Will shutdown.',
    # (the first line of its status as a terminal wraps it)
    "tensorflow.python.framework.errors_impl.UnknownError: Horovod has been shut down. This was caused by an",
    # PyTorch's ProcessGroupNCCL watchdog and its rendezvous store
    "[rank1]:[E ProcessGroupNCCL.cpp:563] Some NCCL operations have failed or timed out. Due to the"
    " asynchronous"
    " nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
    "[Rank 1] NCCL watchdog thread terminated with exception: CUDA error: an illegal memory access",
    "[PG 0 Rank 2] Timeout at NCCL work: 31, last enqueued NCCL work: 31, last completed NCCL work: 30.",
    "torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to"
    " connect to"
    " (10.0.0.1, 29500).",
    "torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving ncclUniqueId"
    " from [0]"
    " via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout",
    # NCCL's result 4 by name (src/nccl.h.in)
    "ncclInvalidArgument: Invalid value for an argument.",
    # Open MPI's TCP transport (opal/mca/btl/tcp/help-mpi-btl-tcp.txt at open-mpi/ompi
    # 8efebee745e15516a7f5f1f295df86c78014c76c), as mpirun under Horovod prints it
    "[1,0]<stderr>:WARNING: Open MPI failed to handshake with a connecting peer MPI",
    "An MPI communication peer process has unexpectedly disconnected.  This",
    # Gloo
    "RuntimeError: [/opt/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] Socket closed"
    " [10.0.0.2]:41122",
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.h:311] Connect timeout [10.0.0.2]:41122",
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:133] Timed out waiting 1800000ms"
    " for send operation to complete",
    # TensorFlow's collective parameter resolver and coordination service
    "tensorflow.python.framework.errors_impl.InternalError: Device /job:worker/replica:0/task:1/device:GPU:0"
    " is"
    " joining a group with incompatible device typeCPU (group_key=2)",
    "InternalError: Collective instance 100 expected type 0 and data_type 1 but got type 2 and data_type 1",
    "FailedPreconditionError: Failed to run collective due to unsuccessful group initialization. Group"
    " initialization failed with error INTERNAL: Device /job:worker/replica:0/task:0/device:GPU:1 is"
    " joining a"
    " group that is already full (group_key=1)",
    "InternalError: Instance 7 found no source for broadcast.  This could mean that there were group_size=2"
    " BcastRecvs but no BcastSend.",
    "tensorflow.python.framework.errors_impl.UnavailableError: Task /job:worker/replica:0/task:3 heartbeat"
    " timeout. This indicates that the remote task has failed, got preempted, or crashed unexpectedly.",
    # CUDA's simpleP2P sample: data copied between the GPUs arrives wrong
    "Verification error @ element 0: val = 0.000000, ref = 0.000000",
    # DCGM's peer-to-peer, NVLink and NVSwitch failures
    "GPU 2 unsuccessfully wrote data to GPU 3 over NVLink in a peer-to-peer test: memory mismatch",
    "GPU 0 was unsuccessfully written to by GPU 1 in a peer-to-peer test: cudaMemcpy failed",
    "GPU 4's NvLink link 11 is currently down",
    "Only 10 NvLinks are up out of the expected 12",
    "Detected fatal errors on NvSwitch 2 link 33",
    "Detected fatal NvSwitch SXID 24007",
]


@pytest.mark.parametrize("log", COLLECTIVE, ids=[line.splitlines()[-1][:60] for line in COLLECTIVE])
def test_a_collective_failure_names_40(log: str) -> None:
    assert int(diagnose(log).code) == 40


FABRIC = [
    "GPU 0: Fabric State is Not Started (1).",
    "GPU 5: Fabric State is Failed (4).",
    "Fabric Manager training has not started.",
    "Fabric Manager training failed.",
]


@pytest.mark.parametrize("log", FABRIC)
def test_dcgm_fabric_state_names_the_nvswitch_fabric(log: str) -> None:
    assert int(diagnose(log).code) == 14


HARMLESS = [
    # what a healthy NCCL run prints (src/misc/socket.cc retries, src/proxy.cc at teardown, interface choice)
    "node1:5:9 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
    "node1:5:9 [0] NCCL INFO Call to connect returned Connection refused, retrying",
    "node1:5:9 [0] NCCL INFO [Service thread] Connection closed by localRank 1",
    "node1:5:9 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read",
    "node1:5:9 [0] NCCL INFO comm 0x5581 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 41000 - Init COMPLETE",
    # AWS Neuron's collectives library uses NCCL's source tree and prefix but is not NCCL
    "2024-Sep-23 00:09:01.0809 1:26 [1] include/socket.h:270 CCOM WARN Skipping IPv6 loopback adddress",
    # DCGM on a GPU whose fabric is trained, or a system without NVSwitch
    "GPU 0: Fabric State is Completed (3).",
    # Horovod's own messages of a healthy start-up
    "[1,0]<stderr>:[2024-01-01 10:00:00.000000: W horovod/common/stall_inspector.cc:107] One or more tensors"
    " were submitted to be reduced",
]


@pytest.mark.parametrize("line", HARMLESS)
def test_lines_of_healthy_runs_stay_harmless(line: str) -> None:
    result = diagnose(line)
    assert [f.signature.id for f in result.findings if f.signature.id in _NEW] == []
    assert int(result.code) == 0


_NEW = (
    "nccl-warn-legacy-format",
    "nccl-failure-relayed",
    "nccl-peer-connection-lost",
    "pytorch-c10d-collective-failed",
    "gloo-peer-lost",
    "horovod-stall-shutdown",
    "tf-collective-group-inconsistent",
    "tf-coordination-peer-lost",
    "simplep2p-verification-error",
    "dcgm-p2p-nvlink-fault",
    "dcgm-fabric-not-ready",
    "prose-p2p-copy-corrupted",
    "nvidia-smi-fabric-not-ready",
    "openmpi-peer-tcp-failed",
)


def test_a_peer_lost_after_an_out_of_memory_is_not_a_second_cause() -> None:
    """A rank that runs out of memory exits; the others then lose it (Gloo, NCCL's sockets, the c10d watchdog,
    TensorFlow's heartbeat). Those lines pass the out-of-memory on: the code stays the job's own (41)."""
    oom = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.69 GiB total capacity)"
    for echo in (
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed"
        " by peer [10.0.0.2]:28048",
        "Last error:\nsocketProgress: Connection closed by remote peer node2<42830>",
        "[E ProcessGroupNCCL.cpp:489] Some NCCL operations have failed or timed out.",
        "An MPI communication peer process has unexpectedly disconnected.  This",
        "UNAVAILABLE: Task /job:worker/replica:0/task:1 heartbeat timeout. This indicates that the remote"
        " task has"
        " failed, got preempted, or crashed unexpectedly.",
    ):
        assert int(diagnose(oom + "\n" + echo).code) == 41, echo
        assert int(diagnose(echo).code) == 40, echo


# The user's words for peer-to-peer copies that arrive wrong (prose-p2p-copy-corrupted; its real sentences
# from five threads are in real_lines.yaml): other phrasings of the same report, and sentences about copies
# between GPUs that went right, which must stay harmless.
P2P_CORRUPTED = [
    "Copying tensors between the two GPUs gives zeros on the second one",
    "Results are corrupted when moving data between GPUs, but fine through the CPU",
    "x.to('cuda:1') from cuda:0 gets a zero tensor",
    "Sending a batch from one GPU to another returns wrong values",
]


@pytest.mark.parametrize("words", P2P_CORRUPTED)
def test_the_users_words_for_corrupted_peer_copies_name_40(words: str) -> None:
    result = diagnose(words)
    assert int(result.code) == 40
    assert "user's words" in result.findings[0].why


@pytest.mark.parametrize(
    "words",
    [
        "Copying data between the GPUs works fine.",
        "Moving the model from one GPU to another is slow",
        "The tensor is moved to the second GPU before the loss is computed.",
    ],
)
def test_words_about_copies_that_went_right_stay_harmless(words: str) -> None:
    assert int(diagnose(words).code) == 0


def _fabric_section(state: str, status: str) -> str:
    """The Fabric section of `nvidia-smi -q` (the layout of
    tests/fixtures/real/nvidia-smi-q_rtx4090_537.13_wsl2.txt and of an H100's, where it reads Completed), with
    the given state (NVSentinel#883: a GPU goes Not Started -> In Progress -> Completed)."""
    return (
        "    Fabric\n"
        f"        State                                          : {state}\n"
        f"        Status                                         : {status}\n"
        "        CliqueId                                       : 0\n"
    )


@pytest.mark.parametrize("state", ["Not Started", "In Progress"])
def test_nvidia_smi_fabric_state_before_completed_is_fabric_not_ready(state: str) -> None:
    assert int(diagnose(_fabric_section(state, "N/A")).code) == 14


@pytest.mark.parametrize("state", ["Completed", "N/A"])
def test_nvidia_smi_fabric_completed_or_absent_is_harmless(state: str) -> None:
    assert int(diagnose(_fabric_section(state, "Success" if state == "Completed" else "N/A")).code) == 0


def test_the_real_nvidia_smi_q_outputs_stay_harmless() -> None:
    """Every recorded `nvidia-smi -q` of a healthy GPU (its Fabric section reads N/A) stays harmless."""
    real = Path(__file__).parent / "fixtures" / "real"
    outputs = sorted(real.glob("nvidia-smi-q_*.txt"))
    assert outputs
    for path in outputs:
        text = path.read_text(encoding="utf-8")
        assert "Fabric" in text
        assert int(diagnose(text).code) == 0, path.name
