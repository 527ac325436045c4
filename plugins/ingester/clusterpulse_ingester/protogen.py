"""Generating the committed gRPC stubs from ``proto/clusterpulse/collector/v1/collector.proto``.

The stubs are generated with ``grpcio-tools`` and committed in ``clusterpulse_ingester/proto``;
``python -m clusterpulse_ingester.protogen`` rewrites them, and the drift test regenerates them
into memory and compares. The .proto keeps its upstream path (``clusterpulse/collector/v1/``) so
the descriptors carry the upstream file name; only the import line of the service module is
rewritten to point at this package. Our additions sit in marked blocks (:func:`upstream_part`
removes them and leaves the upstream listing byte for byte).
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

#: The .proto path relative to the proto root (kept as upstream, descriptors depend on it).
PROTO_FILE = "clusterpulse/collector/v1/collector.proto"
#: Where the generated modules live.
PACKAGE_DIR = Path(__file__).resolve().parent / "proto"
GENERATED = ("collector_pb2.py", "collector_pb2.pyi", "collector_pb2_grpc.py")
_UPSTREAM_IMPORT = "from clusterpulse.collector.v1 import collector_pb2 as"
_LOCAL_IMPORT = "from clusterpulse_ingester.proto import collector_pb2 as"
#: Lines that name the generator's version: they are allowed to differ between grpcio-tools releases.
_VERSION_LINE = re.compile(r"(Protobuf Python Version|GRPC_GENERATED_VERSION =|^\s*\d+,\s*$|_runtime_version\.)")


#: One marked block of the ClusterPulse extension (docs/push-mode.md#protocol-extension), with the
#: blank line that separates a top-level block from what precedes it.
_EXTENSION_BLOCK = re.compile(
    r"(?:^\n)?^[ \t]*// ---- clusterpulse extension begin.*?^[ \t]*// ---- clusterpulse extension end ----\n",
    re.S | re.M,
)
#: Field numbers the extension may use (upstream's are below 100).
EXTENSION_NUMBERS = range(1000, 2000)


def upstream_part(text: str) -> str:
    """The .proto text without the marked extension blocks: the upstream listing, byte for byte."""
    return _EXTENSION_BLOCK.sub("", text)


def extension_blocks(text: str) -> list[str]:
    """The marked extension blocks of the .proto text, in order."""
    return [match.group(0) for match in _EXTENSION_BLOCK.finditer(text)]


def default_proto_root() -> Path:
    """``proto/`` at the repository root (three levels above this package)."""
    return Path(__file__).resolve().parents[3] / "proto"


def generate(proto_root: Path | None = None) -> dict[str, str]:
    """File name -> text of every generated module (requires ``grpcio-tools``)."""
    from grpc_tools import protoc  # the testing extra installs it; runtime never needs it

    root = proto_root or default_proto_root()
    include = Path(protoc.__file__).resolve().parent / "_proto"
    with tempfile.TemporaryDirectory() as out:
        code = protoc.main(
            [
                "grpc_tools.protoc",
                f"-I{root}",
                f"-I{include}",
                f"--python_out={out}",
                f"--pyi_out={out}",
                f"--grpc_python_out={out}",
                str(root / PROTO_FILE),
            ]
        )
        if code != 0:
            raise RuntimeError(f"protoc failed with exit code {code}")
        generated = Path(out) / Path(PROTO_FILE).parent
        files = {name: (generated / name).read_text() for name in GENERATED}
    files["collector_pb2_grpc.py"] = files["collector_pb2_grpc.py"].replace(_UPSTREAM_IMPORT, _LOCAL_IMPORT)
    return files


def comparable(text: str) -> str:
    """The text without the generator-version lines (so a newer grpcio-tools is not drift)."""
    return "\n".join(line for line in text.splitlines() if not _VERSION_LINE.search(line))


def write(files: dict[str, str], target: Path = PACKAGE_DIR) -> None:
    """Write the generated modules into ``target``."""
    for name, text in files.items():
        (target / name).write_text(text)


if __name__ == "__main__":
    write(generate(Path(sys.argv[1]) if len(sys.argv) > 1 else None))
