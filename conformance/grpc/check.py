#!/usr/bin/env python3
"""Conformance check: Python's grpcio drives `cohort serve --grpc` from the schema.

Usage: check.py PROTO_DIR OUT_DIR ADDRESS  (the bearer token in COHORT_GRPC_TOKEN;
see tests/mcp/grpc.rs).

It compiles PROTO_DIR/cohort.proto with grpcio-tools (whose protoc is built in,
so no protoc is needed on the machine) into OUT_DIR, then drives the served API:
open -> run with a verdict -> send -> read with a wait -> key -> list -> close,
a lock refusing a second connection, a wait, the event stream, a bad argument and
a missing token. Prints one line per check and a closing count.
"""
import os
import queue
import sys
import threading

import grpc
from grpc_tools import protoc

PASSED = []
FAILED = []


def check(name, condition, detail=""):
    (PASSED if condition else FAILED).append(name)
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f": {detail}"))
    return condition


def compile_schema(proto_dir, out_dir):
    """Generates cohort_pb2 and cohort_pb2_grpc from the schema into out_dir."""
    include = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    status = protoc.main([
        "grpc_tools.protoc",
        f"-I{proto_dir}",
        f"-I{include}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        os.path.join(proto_dir, "cohort.proto"),
    ])
    if status != 0:
        sys.exit(f"protoc could not compile {proto_dir}/cohort.proto (status {status})")
    sys.path.insert(0, out_dir)


def refused(call, *args, **kwargs):
    """The RpcError a call fails with, or None when it succeeded."""
    try:
        call(*args, **kwargs)
    except grpc.RpcError as e:
        return e
    return None


def main():
    proto_dir, out_dir, address = sys.argv[1:4]
    token = os.environ["COHORT_GRPC_TOKEN"]
    compile_schema(proto_dir, out_dir)
    import cohort_pb2 as pb
    import cohort_pb2_grpc as rpc

    auth = [("authorization", f"Bearer {token}")]
    channel = grpc.insecure_channel(address)
    api = rpc.CohortStub(channel)

    def call(method, request, **kwargs):
        return getattr(api, method)(request, metadata=auth, timeout=60, **kwargs)

    # Without the token: refused as unauthenticated.
    e = refused(api.List, pb.ListRequest(), timeout=30)
    check("no token is unauthenticated",
          e is not None and e.code() == grpc.StatusCode.UNAUTHENTICATED, e)

    # The event stream, read on a thread.
    events = queue.Queue()
    stream = api.Events(pb.EventsRequest(), metadata=auth)

    def follow():
        try:
            for event in stream:
                events.put(event)
        except grpc.RpcError:
            pass

    threading.Thread(target=follow, daemon=True).start()

    opened = call("Open", pb.OpenRequest(name="py-shell"))
    check("open names the session", opened.session.name == "py-shell", opened)
    check("open says how to attach", "tmux" in opened.attach, opened.attach)

    ran = call("Run", pb.RunRequest(target="py-shell", command="echo from-python"))
    check("run returns the output", ran.output.strip() == "from-python", ran.output)
    check("run's verdict is complete", ran.verdict.complete, ran.verdict)
    check("run's verdict has exit status 0",
          ran.verdict.HasField("exit_status") and ran.verdict.exit_status == 0, ran.verdict)
    failed = call("Run", pb.RunRequest(target="py-shell", command="(exit 5)"))
    check("a failing command's status is 5", failed.verdict.exit_status == 5, failed.verdict)

    call("Send", pb.SendRequest(target="py-shell", text="echo typed-$((20 + 1))"))
    read = call("Read", pb.ReadRequest(target="py-shell", wait=pb.Wait()))
    check("read after send shows its output", "typed-21" in read.output, read.output)
    check("read with wait carries a verdict", read.HasField("verdict"), read)

    call("Send", pb.SendRequest(target="py-shell", text="sleep 60"))
    # C-c pressed before the shell took the line would drop the line, not stop a
    # command: the command is running once a short wait says it is not done.
    running = call("Read", pb.ReadRequest(target="py-shell", wait=pb.Wait(timeout_ms=500)))
    check("sleep 60 is still running", not running.verdict.complete, running.verdict)
    call("Key", pb.KeyRequest(target="py-shell", keys=["C-c"]))
    read = call("Read", pb.ReadRequest(target="py-shell", wait=pb.Wait()))
    check("C-c interrupts (status 130)", read.verdict.exit_status == 130, read.verdict)

    # A lock taken on one connection refuses another agent on another.
    held = call("Lock", pb.LockRequest(target="py-shell", owner="alice"))
    check("lock is taken", held.locked and held.holder.owner == "alice", held)
    other = rpc.CohortStub(grpc.insecure_channel(address))
    e = refused(other.Send, pb.SendRequest(target="py-shell", text="echo no", owner="bob"),
                metadata=auth, timeout=30)
    check("another agent is refused by the lock",
          e is not None and e.code() == grpc.StatusCode.PERMISSION_DENIED
          and "locked by" in e.details(), e)
    locks = call("ListLocks", pb.ListLocksRequest())
    check("the lock is listed", [(l.session, l.owner) for l in locks.locks]
          == [("py-shell", "alice")], locks)
    call("Unlock", pb.UnlockRequest(target="py-shell", owner="alice"))

    call("Send", pb.SendRequest(target="py-shell", text="sleep 0.2; echo ready-now"))
    waited = call("WaitFor", pb.WaitForRequest(
        targets=["py-shell"], condition="pattern", pattern="ready-now"))
    check("wait_for meets the pattern", waited.done and "ready-now" in waited.results[0].line,
          waited)

    e = refused(call, "Read", pb.ReadRequest(target="py-shell", mode="sideways"))
    check("a bad mode is an invalid argument",
          e is not None and e.code() == grpc.StatusCode.INVALID_ARGUMENT
          and "unknown mode" in e.details(), e)
    e = refused(call, "Close", pb.TargetRequest(target="nobody-here"))
    check("an unknown target is not found",
          e is not None and e.code() == grpc.StatusCode.NOT_FOUND, e)

    listed = call("List", pb.ListRequest())
    check("list shows the session", any(s.name == "py-shell" for s in listed.sessions), listed)
    call("Close", pb.TargetRequest(target="py-shell"))

    seen = set()
    while not {"session_opened", "lock_changed", "session_closed"} <= seen:
        try:
            event = events.get(timeout=30)
        except queue.Empty:
            break
        seen.add(event.WhichOneof("kind"))
    check("the event stream saw the session open, the lock and the close",
          {"session_opened", "lock_changed", "session_closed"} <= seen, seen)
    stream.cancel()

    print(f"{len(PASSED)} passed, {len(FAILED)} failed")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
