"""admitd's Python client: admission as a service for batch workloads, over gRPC.

    import admitd
    with admitd.Client("localhost:50051") as c:
        wl = c.submit(open("job.yaml").read())     # a Kueue Workload manifest
        c.wait_admitted(wl.metadata.name, namespace=wl.metadata.namespace, timeout=60)

``admitd.Client`` blocks; ``admitd.aio.AsyncClient`` is the same for asyncio. The messages are
``admitd.v1`` (objects_pb2, admission_service_pb2, queue_service_pb2), generated from admitd's
protos when the package is built. Errors raise ``admitd.AdmitdError`` with the gRPC code, the
reason and the field violations admitd sent. See docs/integrating.md.
"""

from admitd._connection import ConnectionOptions
from admitd.client import ApplyResult, Client, Watch
from admitd.errors import AdmitdError, FieldViolation, WaitTimeout
from admitd.v1 import admission_service_pb2, objects_pb2, queue_service_pb2

__version__ = "0.1.0"
__all__ = ["AdmitdError", "ApplyResult", "Client", "ConnectionOptions", "FieldViolation",
           "WaitTimeout", "Watch", "admission_service_pb2", "objects_pb2", "queue_service_pb2"]
