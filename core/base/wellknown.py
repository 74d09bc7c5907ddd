"""Names every leash process agrees on before it has read any configuration:
the state home's environment variable and default, and where the daemon's two
sockets are found.

The thin hook client reads these, so this module imports nothing at all.
"""
HOME_ENV = "LEASH_HOME"
DEFAULT_HOME = "~/.leash"

# The agent socket a hook talks to. Set, it is the separated profile's promise:
# an unreachable daemon then denies rather than judging in-process.
AGENT_SOCKET_ENV = "LEASH_SOCKET"
OPERATOR_SOCKET_ENV = "LEASH_OPERATOR_SOCKET"
RUN_DIR = "run"
AGENT_SOCKET_NAME = "agent.sock"
OPERATOR_SOCKET_NAME = "operator.sock"

# The hook process's pid when leashd judges a hook for it (set by leashd from
# SO_PEERCRED over whatever the client sent): whose Claude Code ran the hook.
# The in-process hook is that process itself.
HOOK_PID_ENV = "LEASH_HOOK_PID"
