"""TensorFlow's device list read as a whole (diagnose/selfreport.py): a GPU listed only as XLA_GPU (22), and a
Kubernetes node that advertises no GPU (11). Every line is copied from the public thread named beside it."""

from __future__ import annotations

from tfdist_validate.diagnose import diagnose
from tfdist_validate.exitcodes import ExitCode

# tensorflow/tensorflow#30748 (tensorflow-gpu 1.14): the GPUs exist only as XLA_GPU devices
ONLY_XLA = (
    "tensorflow.python.framework.errors_impl.InvalidArgumentError: Cannot assign a device for operation"
    " pooled_center_map/center_map/AvgPool: {{node pooled_center_map/center_map/AvgPool}}was explicitly"
    " assigned to /device:GPU:0 but available devices are [ /job:localhost/replica:0/task:0/device:CPU:0,"
    " /job:localhost/replica:0/task:0/device:XLA_CPU:0, /job:localhost/replica:0/task:0/device:XLA_GPU:0,"
    " /job:localhost/replica:0/task:0/device:XLA_GPU:1 ]."
)
# tensorflow/tensorflow#39873: device_lib's list of a working GPU, XLA_GPU beside the GPU device
WITH_GPU = """, name: "/device:XLA_CPU:0"
device_type: "XLA_CPU"
physical_device_desc: "device: XLA_CPU device"
, name: "/device:GPU:0"
device_type: "GPU"
memory_limit: 3136264601
{gpu_desc}
, name: "/device:XLA_GPU:0"
device_type: "XLA_GPU"
physical_device_desc: "device: XLA_GPU device\"""".format(
    gpu_desc='physical_device_desc: "device: 0, name: GeForce GTX 1050 Ti, pci bus id: 0000:01:00.0,'
    ' compute capability: 6.1"'
)


def test_a_gpu_listed_only_as_xla_gpu_is_a_cuda_build_without_its_libraries() -> None:
    result = diagnose(ONLY_XLA)
    assert result.code == ExitCode.TF_NO_GPU
    finding = next(f for f in result.findings if f.signature.id == "tf-gpu-only-as-xla-device")
    assert "XLA_GPU" in finding.why and "cuDNN" in finding.why


def test_xla_gpu_beside_a_gpu_device_is_a_working_gpu() -> None:
    assert diagnose(WITH_GPU).code == ExitCode.OK


def test_a_gpu_device_created_elsewhere_in_the_log_clears_the_xla_only_list() -> None:
    # tensorflow/tensorflow#1534: TensorFlow 0.x creating its GPU device
    created = (
        "I tensorflow/core/common_runtime/gpu/gpu_device.cc:755] Creating TensorFlow device (/gpu:0) ->"
        " (device: 0, name: GeForce GTX 780, pci bus id: 0000:03:00.0)"
    )
    ids = [f.signature.id for f in diagnose(created + "\n" + ONLY_XLA).findings]
    assert "tf-gpu-only-as-xla-device" not in ids


def test_xla_gpu_asked_for_alone_is_not_a_full_device_list() -> None:
    """Without XLA_CPU the list is not TensorFlow's whole list (the user asked for XLA_GPU devices only)."""
    line = ONLY_XLA.replace(" /job:localhost/replica:0/task:0/device:XLA_CPU:0,", "")
    ids = [f.signature.id for f in diagnose(line).findings]
    assert "tf-gpu-only-as-xla-device" not in ids


def test_the_allocated_resources_table_of_an_idle_node_is_not_a_node_without_gpus() -> None:
    """NVIDIA/k8s-device-plugin#89: `kubectl describe node`'s "Allocated resources" (requests, limits) is zero
    on any node where no pod uses a GPU; only Capacity / Allocatable at zero means no GPU advertised."""
    assert diagnose("  nvidia.com/gpu  0           0").code == ExitCode.OK
    assert diagnose('nvidia.com/gpu: "0"').code == ExitCode.CONTAINER_NO_GPU
