#!/usr/bin/env python3
"""Checks cohort's fake iTerm2 server with the official `iterm2` client.

Everything goes through the client's public API: App, Window/Tab/Session,
send_text, get_screen_contents, ScreenStreamer, PromptMonitor, split_pane,
create_tab, variables and VariableMonitor (also on user variables a program sets
with OSC 1337 SetUserVar), CustomControlSequenceMonitor (OSC 1337 Custom), profile
properties, activate, inject,
Transaction, tab titles and session names, close, saved arrangements, the
new-session, layout, focus and termination monitors, the first window iTerm2 opens
when it starts, and the cookie handshake (401 for a missing, wrong or reused
cookie).

The fake must listen where the client looks, `$HOME/Library/Application
Support/iTerm2/private/socket`, and accept the single-use cookies listed in
`COHORT_FAKE_COOKIES` (space-separated; one per connection). Prints one line per
check and a final `N passed, N failed` line; exits non-zero on any failure.
"""

import asyncio
import json
import os
import sys
import tempfile

import iterm2
import iterm2.connection

try:
    from websockets.legacy.exceptions import InvalidStatusCode
except ImportError:
    from websockets.exceptions import InvalidStatusCode

COOKIES = os.environ.get("COHORT_FAKE_COOKIES", "").split()
RESULTS = []

RC = r"""
PS1='$ \[\e]133;B\a\]'
PS0='\e]133;C\a'
PROMPT_COMMAND='printf "\033]133;D;%s\007\033]133;A\007" $?'
"""


def use_next_cookie():
    """The client deletes ITERM2_COOKIE after each connection: set a fresh one."""
    if COOKIES:
        os.environ["ITERM2_COOKIE"] = COOKIES.pop(0)
    else:
        os.environ.pop("ITERM2_COOKIE", None)


def check(name, ok, detail=""):
    RESULTS.append((name, bool(ok)))
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + str(detail) if detail and not ok else ''}", flush=True)


async def eventually(predicate, timeout=10.0):
    deadline = asyncio.get_event_loop().time() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        if asyncio.get_event_loop().time() > deadline:
            return value
        await asyncio.sleep(0.05)


async def screen_text(session):
    contents = await session.async_get_screen_contents()
    return "\n".join(contents.line(i).string for i in range(contents.number_of_lines))


async def guarded(name, coro):
    try:
        await coro
    except Exception as e:  # a failed check, not a crash of the whole run
        check(name, False, f"{type(e).__name__}: {e}")


async def main(connection, rcfile):
    app = await iterm2.async_get_app(connection)
    first = app.windows[0] if len(app.windows) == 1 else None
    check("App: starts with one window, as iTerm2 does",
          first is not None and len(first.tabs) == 1 and len(first.tabs[0].sessions) == 1,
          app.windows)

    command = f"/bin/bash --noprofile --rcfile {rcfile} -i"
    window = await iterm2.Window.async_create(connection, command=command)
    check("Window.async_create", window is not None)
    session = window.current_tab.current_session
    check("App knows the new session", app.get_session_by_id(session.session_id) is not None)

    async def send_and_read():
        await session.async_send_text("echo conf-$((6*7))\r")
        text = await eventually(lambda: _contains(session, "conf-42"))
        check("send_text + get_screen_contents", text)

    await guarded("send_text + get_screen_contents", send_and_read())

    async def streamer():
        async with session.get_screen_streamer() as streamer:
            pending = asyncio.ensure_future(streamer.async_get())
            await asyncio.sleep(0.05)
            await session.async_send_text("echo streamed-$((2+2))\r")
            contents = await asyncio.wait_for(pending, 5)
            check("ScreenStreamer delivers an update", contents is not None)

    await guarded("ScreenStreamer delivers an update", streamer())

    async def prompts():
        modes = [
            iterm2.PromptMonitor.Mode.PROMPT,
            iterm2.PromptMonitor.Mode.COMMAND_START,
            iterm2.PromptMonitor.Mode.COMMAND_END,
        ]
        async with iterm2.PromptMonitor(connection, session.session_id, modes=modes) as mon:
            await session.async_send_text("false\r")
            seen = {}
            # Marks of the command before (the streamer's echo) may still be on their
            # way: what counts starts with this command's COMMAND_START.
            while iterm2.PromptMonitor.Mode.PROMPT not in seen or iterm2.PromptMonitor.Mode.COMMAND_END not in seen:
                mode, info = await asyncio.wait_for(mon.async_get(), 5)
                if mode == iterm2.PromptMonitor.Mode.COMMAND_START:
                    if info == "false":
                        seen[mode] = info
                    continue
                if iterm2.PromptMonitor.Mode.COMMAND_START in seen:
                    seen.setdefault(mode, info)
            check("PromptMonitor COMMAND_START carries the command",
                  seen.get(iterm2.PromptMonitor.Mode.COMMAND_START) == "false",
                  seen.get(iterm2.PromptMonitor.Mode.COMMAND_START))
            check("PromptMonitor COMMAND_END carries the exit status",
                  seen.get(iterm2.PromptMonitor.Mode.COMMAND_END) == 1,
                  seen.get(iterm2.PromptMonitor.Mode.COMMAND_END))
            prompt = seen.get(iterm2.PromptMonitor.Mode.PROMPT)
            check("PromptMonitor PROMPT carries a Prompt", prompt is not None)
        last = await iterm2.async_get_last_prompt(connection, session.session_id)
        check("async_get_last_prompt", last is not None and last.state == iterm2.PromptState.EDITING,
              last and last.state)

    await guarded("PromptMonitor", prompts())

    async def variables():
        await session.async_set_variable("user.cohort_check", "v1")
        value = await session.async_get_variable("user.cohort_check")
        check("session variables round-trip", value == "v1", value)
        job = await session.async_get_variable("jobName")
        check("jobName names the shell", job == "bash", job)
        try:
            await session.async_set_variable("not.user", "x")
            check("non-user variables are refused", False)
        except Exception:
            check("non-user variables are refused", True)

    await guarded("variables", variables())

    async def monitors():
        scope = iterm2.VariableScopes.SESSION
        async with iterm2.VariableMonitor(connection, scope, "user.cohort_watch", session.session_id) as mon:
            await session.async_set_variable("user.cohort_watch", "w1")
            first = await asyncio.wait_for(mon.async_get(), 5)
            # Setting the same value again is no change: the next notice is w2.
            await session.async_set_variable("user.cohort_watch", "w1")
            await session.async_set_variable("user.cohort_watch", "w2")
            second = await asyncio.wait_for(mon.async_get(), 5)
            check("VariableMonitor sends changes, and only changes", (first, second) == ("w1", "w2"),
                  (first, second))
        async with iterm2.VariableMonitor(connection, scope, "user.cohort_all", "all") as mon:
            await session.async_set_variable("user.cohort_all", "a1")
            value = await asyncio.wait_for(mon.async_get(), 5)
            check("VariableMonitor on all sessions", value == "a1", value)
        async with iterm2.VariableMonitor(connection, scope, "jobName", session.session_id) as mon:
            await session.async_send_text("sleep 1\r")
            started = await asyncio.wait_for(mon.async_get(), 5)
            ended = await asyncio.wait_for(mon.async_get(), 5)
            check("VariableMonitor follows jobName", (started, ended) == ("sleep", "bash"), (started, ended))
        async with iterm2.VariableMonitor(connection, scope, "user.cohort_osc", session.session_id) as mon:
            # What a program prints: OSC 1337 SetUserVar with a base64 value ("osc1").
            await session.async_inject(b"\x1b]1337;SetUserVar=cohort_osc=b3NjMQ==\x07")
            value = await asyncio.wait_for(mon.async_get(), 5)
            check("SetUserVar in the output sets user.* and its monitors hear of it", value == "osc1", value)
            read = await session.async_get_variable("user.cohort_osc")
            check("a variable set by the output reads back", read == "osc1", read)
            await session.async_inject(b"\x1b]1337;SetUserVar=cohort_osc\x1b\\")
            gone = await asyncio.wait_for(mon.async_get(), 5)
            check("SetUserVar without a value unsets", gone is None, gone)

    await guarded("VariableMonitor", monitors())

    async def custom_sequences():
        async with iterm2.CustomControlSequenceMonitor(connection, "s3cret", r"^build (\w+)$", session.session_id) as mon:
            # What a program prints: OSC 1337 Custom with the shared secret; one with
            # another identity, and one whose payload does not match, are not heard.
            await session.async_inject(b"\x1b]1337;Custom=id=other:build wrong\x07")
            await session.async_inject(b"\x1b]1337;Custom=id=s3cret:unrelated\x07")
            await session.async_inject(b"\x1b]1337;Custom=id=s3cret:build done\x1b\\")
            match = await asyncio.wait_for(mon.async_get(), 5)
            check("CustomControlSequenceMonitor hears its identity's sequence", match.group(1) == "done",
                  match.group(0))
        async with iterm2.CustomControlSequenceMonitor(connection, "s3cret", r".*") as mon:
            await session.async_inject(b"\x1b]1337;Custom=id=s3cret:from any session\x07")
            match = await asyncio.wait_for(mon.async_get(), 5)
            check("CustomControlSequenceMonitor on all sessions", match.group(0) == "from any session",
                  match.group(0))

    await guarded("CustomControlSequenceMonitor", custom_sequences())

    async def profile():
        change = iterm2.LocalWriteOnlyProfile()
        change.set_badge_text("B1")
        change.set_tab_color(iterm2.Color(255, 128, 0))
        change.set_use_tab_color(True)
        change.set_background_color(iterm2.Color(16, 16, 16))
        await session.async_set_profile_properties(change)
        prof = await session.async_get_profile()
        check("profile properties round-trip", prof.badge_text == "B1" and prof.use_tab_color, prof.badge_text)
        check("tab colour round-trips", round(prof.tab_color.red) == 255 and round(prof.tab_color.green) == 128,
              prof.tab_color)

    await guarded("profile properties", profile())

    async def names():
        await window.current_tab.async_set_title("T1")
        title = await window.current_tab.async_get_variable("title")
        check("tab title via invoke_function", title == "T1", title)
        await session.async_set_name("N1")
        await app.async_refresh()
        check("session name via invoke_function", app.get_session_by_id(session.session_id).name == "N1")

    await guarded("titles and names", names())

    async def inject():
        await session.async_inject(b"\r\ninjected-text\r\n")
        check("inject", await eventually(lambda: _contains(session, "injected-text")))

    await guarded("inject", inject())

    async def transaction():
        async with iterm2.Transaction(connection):
            info = await session.async_get_line_info()
            lines = await session.async_get_contents(info.overflow, info.scrollback_buffer_height + info.mutable_area_height)
        check("Transaction + get_line_info + get_contents", len(lines) > 0 and any("conf-42" in l.string for l in lines))

    await guarded("Transaction", transaction())

    async def split_and_tabs():
        new = await session.async_split_pane(vertical=True)
        check("split_pane", new is not None and new.session_id != session.session_id)
        await app.async_refresh()
        check("split shows in the tab", len(window.current_tab.sessions) == 2, window.current_tab.sessions)
        await new.async_send_text("echo in-split\r")
        check("split pane has a live terminal", await eventually(lambda: _contains(new, "in-split")))

        domain = iterm2.broadcast.BroadcastDomain()
        domain.add_session(session)
        domain.add_session(new)
        await iterm2.broadcast.async_set_broadcast_domains(connection, [domain])
        await app.async_refresh_broadcast_domains()
        # iTerm2 reports per window the domain of its focused session (empty if none).
        got = [sorted(s.session_id for s in d.sessions) for d in app.broadcast_domains if d.sessions]
        check("broadcast domains round-trip", got == [sorted([session.session_id, new.session_id])], got)
        await session.async_send_text("echo fanned-$((4*4))\r")
        check("send_text reaches the broadcast domain", await eventually(lambda: _contains(new, "fanned-16")))
        await session.async_send_text("echo kept-$((5*5))\r", suppress_broadcast=True)
        check("suppress_broadcast: the text reaches its session",
              await eventually(lambda: _contains(session, "kept-25")))
        await asyncio.sleep(0.3)
        check("suppress_broadcast: and no other", not await _contains(new, "kept-25"))
        if first is not None:
            across = iterm2.broadcast.BroadcastDomain()
            across.add_session(first.tabs[0].sessions[0])
            across.add_session(session)
            try:
                await iterm2.broadcast.async_set_broadcast_domains(connection, [across])
                check("a domain across windows is refused", False, "accepted")
            except iterm2.rpc.RPCException as e:
                check("a domain across windows is refused", "SESSIONS_NOT_IN_SAME_WINDOW" in str(e), e)
        await iterm2.broadcast.async_set_broadcast_domains(connection, [])
        await app.async_refresh_broadcast_domains()
        check("broadcast domains cleared", all(not d.sessions for d in app.broadcast_domains),
              app.broadcast_domains)
        tab = await window.async_create_tab(command=command)
        check("create_tab", tab is not None)
        await app.async_refresh()
        check("the window has two tabs", len(window.tabs) == 2, window.tabs)
        await new.async_activate()
        await app.async_refresh_focus()
        check("activate selects the session", window.current_tab.current_session.session_id == new.session_id)
        await new.async_close(force=True)
        await app.async_refresh()
        check("close removes the session", app.get_session_by_id(new.session_id) is None)
        await tab.async_close(force=True)
        await app.async_refresh()
        check("close removes the tab", len(window.tabs) == 1, window.tabs)

    await guarded("splits and tabs", split_and_tabs())

    async def dynamic_profiles():
        # iTerm2 loads every file of its DynamicProfiles folder; a profile there is
        # listed, and a tab can start from it by name.
        folder = os.path.join(os.environ["HOME"], "Library/Application Support/iTerm2/DynamicProfiles")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "conformance.json"), "w") as f:
            json.dump({"Profiles": [{
                "Name": "Conformance Team", "Guid": "conformance-team-1",
                "Dynamic Profile Parent Name": "Default", "Badge Text": "conf",
            }]}, f)
        profiles = await iterm2.PartialProfile.async_query(connection)
        names = [p.name for p in profiles]
        check("a dynamic profile is listed", "Conformance Team" in names and "Default" in names, names)
        made = await iterm2.Window.async_create(connection, profile="Conformance Team", command=command)
        prof = await made.current_tab.current_session.async_get_profile()
        check("a tab starts from a dynamic profile", prof.badge_text == "conf", prof.badge_text)
        try:
            await iterm2.Window.async_create(connection, profile="No Such Profile", command=command)
            check("an unknown profile is refused", False, "a window was made")
        except iterm2.CreateWindowException as e:
            check("an unknown profile is refused", "INVALID_PROFILE_NAME" in str(e), e)
        await made.async_close(force=True)

    await guarded("dynamic profiles", dynamic_profiles())

    async def buried():
        # A buried session leaves its tab and is listed apart; disinterred, it goes
        # back to its tab.
        other = await session.async_split_pane(vertical=True)
        await other.async_set_buried(True)
        await app.async_refresh()
        check("a buried session is listed as buried",
              other.session_id in [s.session_id for s in app.buried_sessions], app.buried_sessions)
        check("a buried session leaves its tab",
              other.session_id not in [s.session_id for s in window.current_tab.sessions])
        await other.async_send_text("echo while-buried-$((8*8))\r")
        await other.async_set_buried(False)
        await app.async_refresh()
        check("a disinterred session is back in its tab",
              other.session_id in [s.session_id for s in window.current_tab.sessions],
              window.current_tab.sessions)
        check("a buried session ran on", await eventually(lambda: _contains(other, "while-buried-64")))
        await other.async_close(force=True)

    await guarded("buried sessions", buried())

    async def status_bar_component():
        # A script's status-bar component registers as iTerm2 takes it; the same
        # function again is a duplicate.
        component = iterm2.StatusBarComponent(
            short_description="conformance", detailed_description="a test component",
            knobs=[], exemplar="ok", update_cadence=None,
            identifier="dev.cohort.conformance")

        @iterm2.StatusBarRPC
        async def conformance_status(knobs, line=iterm2.Reference("user.line?")):
            return line or ""

        await conformance_status.async_register(connection, component)
        check("a status-bar component registers", True)
        try:
            await conformance_status.async_register(connection, component)
            check("a second registration is a duplicate", False, "accepted")
        except iterm2.notifications.SubscriptionException as e:
            check("a second registration is a duplicate", "DUPLICATE_SERVER_ORIGINATED_RPC" in str(e), e)

    await guarded("status-bar component", status_bar_component())

    async def arrangements():
        # A window saved under a name is listed, and restores as a new window of
        # the same shape, or as tabs of a window; an unknown name is refused.
        extra = await session.async_split_pane(vertical=False)
        await window.async_save_window_as_arrangement("conformance-arrangement")
        names = await iterm2.Arrangement.async_list(connection)
        check("a saved window arrangement is listed", "conformance-arrangement" in names, names)
        before = {w.window_id for w in app.windows}
        await iterm2.Arrangement.async_restore(connection, "conformance-arrangement")
        await app.async_refresh()
        restored = [w for w in app.windows if w.window_id not in before]
        shapes = [[len(t.sessions) for t in w.tabs] for w in restored]
        mine = [len(t.sessions) for t in window.tabs]
        check("an arrangement restores as a new window of its shape", shapes == [mine], (shapes, mine))
        tabs = len(window.tabs)
        await window.async_restore_window_arrangement("conformance-arrangement")
        await app.async_refresh()
        check("restored into a window, it adds tabs", len(window.tabs) == 2 * tabs, window.tabs)
        try:
            await iterm2.Arrangement.async_restore(connection, "no-such-arrangement")
            check("an unknown arrangement is refused", False, "accepted")
        except iterm2.arrangement.SavedArrangementException as e:
            check("an unknown arrangement is refused", "ARRANGEMENT_NOT_FOUND" in str(e), e)
        for w in restored:
            await w.async_close(force=True)
        for tab in window.tabs[tabs:]:
            await tab.async_close(force=True)
        await extra.async_close(force=True)

    await guarded("saved arrangements", arrangements())

    async def monitors_of_the_app():
        # What iTerm2 tells a script as it happens: a new session, the layout
        # changing, focus moving to a session, a session ending.
        async with iterm2.NewSessionMonitor(connection) as new_sessions, \
                iterm2.LayoutChangeMonitor(connection) as layouts, \
                iterm2.SessionTerminationMonitor(connection) as ended:
            other = await session.async_split_pane(vertical=True)
            made = await asyncio.wait_for(new_sessions.async_get(), 10)
            check("NewSessionMonitor names the new session", made == other.session_id, made)
            await asyncio.wait_for(layouts.async_get(), 10)
            check("LayoutChangeMonitor fires on a split", True)
            async with iterm2.FocusMonitor(connection) as focus:
                await other.async_activate()
                seen = None
                deadline = asyncio.get_event_loop().time() + 10
                while asyncio.get_event_loop().time() < deadline:
                    update = await asyncio.wait_for(focus.async_get_next_update(), 10)
                    if update.active_session_changed:
                        seen = update.active_session_changed.session_id
                        break
                check("FocusMonitor reports the session activated", seen == other.session_id, seen)
            await other.async_close(force=True)
            # Sessions closed earlier may be reported first: their programs end late.
            gone = []
            while other.session_id not in gone and len(gone) < 20:
                gone.append(await asyncio.wait_for(ended.async_get(), 10))
            check("SessionTerminationMonitor names the closed session", other.session_id in gone, gone)

    await guarded("monitors", monitors_of_the_app())


async def _contains(session, needle):
    return needle in await screen_text(session)


def refused(name, cookie):
    """Connects with `cookie` (or none) and expects iTerm2's 401."""
    if cookie is None:
        os.environ.pop("ITERM2_COOKIE", None)
    else:
        os.environ["ITERM2_COOKIE"] = cookie

    async def accepted(connection):
        check(name, False, "the connection was accepted")

    try:
        iterm2.run_until_complete(accepted)
    except InvalidStatusCode as e:
        check(name, e.status_code == 401, e.status_code)
    except BaseException as e:  # noqa: B036 - anything else is a failed check
        check(name, False, f"{type(e).__name__}: {e}")


def run():
    # On a 401 the client asks AppleScript for a fresh cookie. There is none here:
    # it gets none, so the 401 itself reaches the caller.
    iterm2.connection.Connection.authenticate = lambda self, force: False

    rcfile = tempfile.NamedTemporaryFile("w", suffix=".bashrc", delete=False)
    rcfile.write(RC)
    rcfile.close()

    used = COOKIES[0] if COOKIES else None
    use_next_cookie()
    iterm2.run_until_complete(lambda c: main(c, rcfile.name))

    # Single-use cookies: the one just used is refused, as are a wrong one and none.
    if used:
        refused("a reused single-use cookie is refused (401)", used)
    refused("a wrong cookie is refused (401)", "0123456789abcdef0123456789abcdef")
    refused("a missing cookie is refused (401)", None)

    # A fresh cookie connects again, and the windows are still there.
    async def again(connection):
        app = await iterm2.async_get_app(connection)
        check("a new connection sees the existing windows", len(app.windows) == 2, app.windows)
        for window in app.windows:
            await window.async_close(force=True)

    use_next_cookie()
    iterm2.run_until_complete(again)

    passed = sum(1 for _, ok in RESULTS if ok)
    failed = len(RESULTS) - passed
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not RESULTS else 0


if __name__ == "__main__":
    sys.exit(run())
