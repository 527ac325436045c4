"""Hostile gRPC clients, run as a separate process so the ingester's memory is measured alone.

``python hostile_client.py PORT MODE COUNT SIZE``: opens COUNT ``Connect`` streams at once and
prints one JSON object: how many ended with each status code. MODE ``silent`` sends nothing
(unregistered streams, slow-loris), ``oversized`` sends one SIZE-byte message, ``bad_token``
registers as cluster ``edge`` with a wrong token (one stream at a time, a burst).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter

import grpc
from clusterpulse_ingester.proto import collector_pb2 as pb
from clusterpulse_ingester.proto import collector_pb2_grpc as pb_grpc

#: Streams per HTTP/2 connection (grpc's own per-connection limit is far above).
PER_CHANNEL = 100


async def one(stub: pb_grpc.CollectorServiceStub, mode: str, size: int, timeout: float) -> str:
    call = stub.Connect(metadata=[("authorization", "Bearer wrong")], timeout=timeout)
    try:
        if mode == "oversized":
            payload = pb.ConnectRequest(register=pb.RegisterRequest(cluster_name="edge", token="x" * size))
            await call.write(payload)
        elif mode == "bad_token":
            await call.write(pb.ConnectRequest(register=pb.RegisterRequest(cluster_name="edge", token="wrong")))
        async for _ in call:
            pass
        return "OK"
    except grpc.aio.AioRpcError as exc:
        return exc.code().name


async def main(port: int, mode: str, count: int, size: int, timeout: float) -> None:
    channels = [
        grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", -1)])
        for _ in range(max(1, count // PER_CHANNEL))
    ]
    stubs = [pb_grpc.CollectorServiceStub(channel) for channel in channels]
    if mode == "bad_token":
        codes = [await one(stubs[0], mode, size, timeout) for _ in range(count)]
    else:
        codes = await asyncio.gather(*(one(stubs[i % len(stubs)], mode, size, timeout) for i in range(count)))
    for channel in channels:
        await channel.close()
    print(json.dumps(Counter(codes)))


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])))
