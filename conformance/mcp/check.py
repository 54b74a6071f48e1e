#!/usr/bin/env python3
"""Conformance check: the official MCP Python SDK drives `cohort mcp` over stdio.

Usage: check.py PATH/TO/cohort  (the environment selects cohort's tmux socket and
state directory; see tests/mcp/mcp_conformance.rs).

It lists the tools, validates every input and output schema, and drives
open -> run -> read -> key -> close, write_many/read_many over three sessions, and
a lock refusing a second owner, validating every structured result against its
tool's output schema. Prints one line per check and a closing count.
"""
import asyncio
import os
import sys
import time

import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

PASSED = []
FAILED = []


def field(obj, snake, camel):
    """The SDK's 2.x models use snake_case attributes, 1.x camelCase."""
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


def check(name, condition, detail=""):
    (PASSED if condition else FAILED).append(name)
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f": {detail}"))
    return condition


class Cohort:
    def __init__(self, session, tools):
        self.session = session
        self.tools = {t.name: t for t in tools}

    async def call(self, name, args, expect_error=False):
        result = await self.session.call_tool(name, args)
        label = f"{name} {sorted(args)}"
        if expect_error:
            text = " ".join(c.text for c in result.content if getattr(c, "text", None))
            check(f"{label} is refused with a message", field(result, "is_error", "isError") and len(text) > 10, result)
            return text
        check(f"{label} succeeds", not field(result, "is_error", "isError"), result.content)
        self.last_text = "".join(c.text for c in result.content if getattr(c, "text", None))
        schema = field(self.tools[name], "output_schema", "outputSchema")
        structured = field(result, "structured_content", "structuredContent")
        try:
            jsonschema.validate(structured, schema)
            check(f"{label} output matches its schema", True)
        except jsonschema.ValidationError as e:
            check(f"{label} output matches its schema", False, e.message)
        return structured

    async def screen_shows(self, target, line, timeout=15):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            result = await self.session.call_tool("read", {"target": target, "mode": "screen"})
            screen = (field(result, "structured_content", "structuredContent") or {}).get("output", "")
            if line in screen.splitlines():
                return True
            await asyncio.sleep(0.05)
        return False


async def main(binary):
    params = StdioServerParameters(command=binary, args=["mcp", "--toolsets", "all"], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check("initialize names the server", field(init, "server_info", "serverInfo").name == "cohort", init)
            tools = (await session.list_tools()).tools
            names = {t.name for t in tools}
            for expected in ["open", "send", "read", "run", "key", "close", "list", "status", "create_layout", "split",
                             "focus", "set_appearance", "register_agent", "list_agents", "remove_agent", "create_team",
                             "list_teams", "remove_team", "assign_team", "write_many", "read_many", "broadcast", "lock",
                             "unlock", "request_access", "notifications", "tag"]:
                check(f"tool {expected} is listed", expected in names, sorted(names))
            for tool in tools:
                input_schema = field(tool, "input_schema", "inputSchema")
                output_schema = field(tool, "output_schema", "outputSchema")
                try:
                    jsonschema.validators.validator_for(input_schema).check_schema(input_schema)
                    check(f"{tool.name} input schema is valid", True)
                except jsonschema.SchemaError as e:
                    check(f"{tool.name} input schema is valid", False, e.message)
                has_output = output_schema is not None
                check(f"{tool.name} has an output schema", has_output)
                if has_output:
                    try:
                        jsonschema.validators.validator_for(output_schema).check_schema(output_schema)
                        check(f"{tool.name} output schema is valid", True)
                    except jsonschema.SchemaError as e:
                        check(f"{tool.name} output schema is valid", False, e.message)
                check(f"{tool.name} has annotations", tool.annotations is not None)

            c = Cohort(session, tools)
            # open -> run -> read -> key -> close
            opened = await c.call("open", {"name": "conf"})
            check("open returns the session", opened["session"]["name"] == "conf", opened)
            ran = await c.call("run", {"target": "conf", "command": "echo conformance-$((6*7)); false"})
            verdict = ran["verdict"]
            check("run completes with the exit status", verdict["complete"] and verdict["exit_status"] == 1
                  and verdict["layer"] == "exit", verdict)
            check("run returns the output without the echo", ran["output"].strip() == "conformance-42", ran["output"])
            text = "héllo 世界 🎉"
            ran = await c.call("run", {"target": "conf", "command": f"echo '{text}'"})
            check("unicode round-trips exactly", ran["output"].strip() == text, repr(ran["output"]))
            check("run's text content is the output as printed, then the meta line",
                  c.last_text == ran["output"].rstrip("\n") + "\n" + ran["meta"], repr(c.last_text))
            await c.call("send", {"target": "conf", "text": "echo sent-text"})
            check("send reaches the shell", await c.screen_shows("conf", "sent-text"))
            read = await c.call("read", {"target": "conf"})
            check("read returns new output with a meta line", "sent-text" in read["output"] and read["meta"].startswith("["), read)
            await c.call("send", {"target": "conf", "text": "sleep 0.3; echo waited-for"})
            waited = await c.call("read", {"target": "conf", "wait": True, "timeout_ms": 10000})
            check("read with wait returns the verdict of what send started",
                  waited["verdict"]["complete"] and waited["verdict"]["exit_status"] == 0
                  and "waited-for" in waited["output"], waited)
            await c.call("run", {"target": "conf", "command": "sleep 30", "timeout_ms": 300})
            await c.call("key", {"target": "conf", "keys": ["C-c"]})
            status = await c.call("status", {"target": "conf"})
            deadline = time.monotonic() + 10
            while status["session"]["foreground"] != "bash" and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                status = await c.call("status", {"target": "conf"})
            check("key C-c interrupts and the shell is back", status["session"]["foreground"] == "bash", status)
            await c.call("close", {"target": "conf"})
            listed = await c.call("list", {})
            check("close removes the session", all(s["name"] != "conf" for s in listed["sessions"]), listed)

            # write_many / read_many over three sessions
            for name in ["p1", "p2", "p3"]:
                await c.call("open", {"name": name})
            wrote = await c.call("write_many", {"targets": ["p1", "p2", "p3", "p1"], "text": "echo wm-$((40+2))"})
            check("write_many writes each session once", len(wrote["results"]) == 3
                  and all(r["ok"] for r in wrote["results"]), wrote)
            for name in ["p1", "p2", "p3"]:
                check(f"write_many reached {name}", await c.screen_shows(name, "wm-42"))
            many = await c.call("read_many", {"targets": ["p1", "p2", "p3"], "filter": "^wm-", "limit": 5})
            check("read_many reads all three, filtered", len(many["results"]) == 3
                  and all(r["text"] == "wm-42" for r in many["results"]), many)

            # a lock refusing a second owner
            await c.call("lock", {"target": "p1", "owner": "alice"})
            refused = await c.call("lock", {"target": "p1", "owner": "bob"}, expect_error=True)
            check("the refusal names the holder", "alice" in refused, refused)
            await c.call("send", {"target": "p1", "text": "echo bob", "owner": "bob"}, expect_error=True)
            await c.call("send", {"target": "p1", "text": "echo alice", "owner": "alice"})
            await c.call("request_access", {"target": "p1", "requester": "bob", "reason": "tests"})
            notes = await c.call("notifications", {"owner": "alice"})
            check("the holder reads the access request",
                  any(n["from"] == "bob" and n["kind"] == "access_request" for n in notes["notifications"]), notes)
            await c.call("unlock", {"target": "p1", "owner": "alice"})

            # errors are tool results that say what to do
            await c.call("read", {"target": "nobody"}, expect_error=True)
            await c.call("run", {"target": "p2", "command": "x", "until": "(", "regex": True}, expect_error=True)
            await c.call("run", {"target": "p2", "command": "rm -rf ~"}, expect_error=True)
            await c.call("send", {"target": 7}, expect_error=True)
            for name in ["p1", "p2", "p3"]:
                await c.call("close", {"target": name})

    print(f"conformance: {len(PASSED)} passed, {len(FAILED)} failed")
    return 0 if not FAILED else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
