"""The admitd Python client. Its gRPC stubs are generated from the repository's protos/ when the
package is built (`pip install ./clients/python`), with the protoc and grpc_python_plugin of
Debian's protobuf-compiler and protobuf-compiler-grpc packages (the ones the C++ build uses), so
that stubs, runtime and server speak the same protocol version."""

import glob
import os
import shutil
import subprocess
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PROTOS = os.path.normpath(os.path.join(HERE, "..", "..", "protos"))


def _tool(name, env):
    path = os.environ.get(env) or shutil.which(name)
    if not path:
        raise SystemExit("admitd client: %s not found (Debian: apt-get install protobuf-compiler "
                         "protobuf-compiler-grpc), or set %s" % (name, env))
    return path


def generate(out_dir):
    """Writes admitd/v1/*_pb2.py, *_pb2_grpc.py and admitd/_rpc/*_pb2.py under out_dir."""
    if not os.path.isdir(os.path.join(PROTOS, "admitd", "v1")):
        raise SystemExit("admitd client: the protos are not at %s: build from the repository "
                         "(pip install ./clients/python)" % PROTOS)
    protoc = _tool("protoc", "PROTOC")
    plugin = _tool("grpc_python_plugin", "GRPC_PYTHON_PLUGIN")
    services = sorted(glob.glob(os.path.join(PROTOS, "admitd", "v1", "*.proto")))
    rpc = sorted(glob.glob(os.path.join(PROTOS, "google", "rpc", "*.proto")))
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([protoc, "-I", PROTOS, "--python_out", tmp, "--grpc_python_out", tmp,
                        "--plugin=protoc-gen-grpc_python=" + plugin] +
                       [os.path.relpath(p, PROTOS) for p in services], check=True)
        subprocess.run([protoc, "-I", PROTOS, "--python_out", tmp] +
                       [os.path.relpath(p, PROTOS) for p in rpc], check=True)
        _package(os.path.join(tmp, "admitd", "v1"), os.path.join(out_dir, "admitd", "v1"),
                 "admitd.v1 messages and service stubs, generated from protos/admitd/v1.")
        # google.rpc's status and error details, under the package (another library may own the
        # top-level google.rpc); they import nothing but google.protobuf.
        _package(os.path.join(tmp, "google", "rpc"), os.path.join(out_dir, "admitd", "_rpc"),
                 "google.rpc messages (protos/google/rpc), as admitd sends them.")


def _package(generated, dest, doc):
    """Copies the generated modules of `generated` into the package directory `dest`."""
    os.makedirs(dest, exist_ok=True)
    for f in glob.glob(os.path.join(generated, "*.py")):
        shutil.copy(f, dest)
    with open(os.path.join(dest, "__init__.py"), "w") as f:
        f.write('"""%s"""\n' % doc)


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        generate(self.build_lib)


setup(
    name="admitd",
    version="0.1.0",
    description="Client of admitd, admission as a service for batch workloads",
    packages=["admitd"],
    python_requires=">=3.9",
    install_requires=["grpcio>=1.51", "protobuf>=3.21"],
    cmdclass={"build_py": BuildWithStubs},
    package_data={"admitd": ["py.typed"]},
)
