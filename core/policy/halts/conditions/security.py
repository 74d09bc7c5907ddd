"""Security: secrets exposure, privilege escalation, data exposure, unknown commands."""
from __future__ import annotations

import os
import re

from leash.core.base.lazy_re import lazy
from leash.core.policy.halts.conditions.registry import Finding, condition

SYSTEM_PATHS = ("/", "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/var", "/boot", "/root", "/opt", "/sys",
                "/proc", "/dev", "/srv")
_WORLD_WRITABLE = lazy(r"^(?:0?[0-7]?[0-7][0-7][2367]|[ugoa]*[ao][ugoa]*\+[rwxXst]*w[rwxXst]*)$")
_SETUID = lazy(r"^(?:0?[2467][0-7]{3}|[ugoa]*\+[rwxX]*s[rwxX]*)$")
_AS_ROOT = {"sudo", "doas", "pkexec", "runuser", "chroot"}
MAX_PATH_CHARS = 4096  # PATH_MAX: a longer word is not a file name
MAX_SHOWN = 200
_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish"}
_DOWNLOADERS = {"curl", "wget"}
_PRIVILEGE_PROGRAMS = {"su", "pkexec", "doas", "visudo", "setcap", "chpasswd", "passwd", "usermod", "useradd",
                       "groupadd", "gpasswd"}
_SENSITIVE_FILES = lazy(
    r"(?:^|/)(?:id_(?:rsa|dsa|ecdsa|ed25519)(?!\.pub)\b|[^/]*\.(?:pem|key|p12|pfx|keystore|jks)$|shadow$|gshadow$|"
    r"sudoers$|\.env(?:\.[\w-]+)?$|\.netrc$|\.pgpass$|\.git-credentials$|credentials(?:\.json)?$|"
    r"\.aws/config$|\.kube/config$|\.docker/config\.json$|secrets?\.(?:ya?ml|json|toml|env)$)")
_READERS = {"cat", "less", "more", "head", "tail", "cp", "scp", "rsync", "base64", "xxd", "od", "strings", "tar",
            "zip", "gzip", "openssl", "gpg", "curl", "wget", "nc", "ncat", "socat", "tee", "grep", "awk", "sed"}
_SENDERS = {"curl", "wget", "nc", "ncat", "netcat", "socat", "scp", "rsync", "sftp", "ftp", "ssh", "telnet"}
_DUMPERS = {"pg_dump", "pg_dumpall", "mysqldump", "mongodump", "redis-cli", "env", "printenv", "set", "sqlite3"}
_LOOPBACK = lazy(r"(?:^|[/@])(?:localhost|127\.\d+\.\d+\.\d+|\[?::1\]?)(?:[:/]|$)")
_PUBLIC_ACL = lazy(r"public-read(?:-write)?|allusers|allauthenticatedusers|--public\b|acl=public",
                         re.IGNORECASE)

# Programs whose effects are well known. Anything else — or a path to a
# program outside the working tree — is an "unknown command".
KNOWN_PROGRAMS = frozenset("""
ls cat head tail less more wc sort uniq cut tr grep egrep fgrep rg ag find fd xargs sed awk diff cmp comm paste
join tee echo printf true false test [ pwd cd pushd popd export unset set source . alias type which whereis
command env date sleep basename dirname realpath readlink stat file du df free uptime whoami id hostname uname
ps top htop kill pgrep jobs wait touch mkdir rmdir rm cp mv ln chmod chown install tar gzip gunzip zip unzip xz
bzip2 zcat git gh hg svn make cmake ninja meson bazel gcc g++ cc clang clang++ ld ar go gofmt cargo rustc
rustup rustfmt python python3 pip pip3 pipx uv poetry pytest tox nox mypy ruff black isort flake8 pylint
coverage node npm npx yarn pnpm bun deno tsc eslint prettier jest vitest mocha java javac mvn gradle kotlin
ruby gem bundle rake rspec php composer perl dotnet swift swiftc psql mysql sqlite3 redis-cli docker kubectl
helm terraform aws gcloud az curl wget ssh scp rsync jq yq base64 sha256sum md5sum openssl tmux leash nproc
seq yes timeout nohup nice time watch clear tput stty history man help vim vi nano code less column expand
""".split())
READ_ONLY_PROGRAMS = frozenset("""
ls cat head tail less more wc sort uniq cut tr grep egrep fgrep rg ag find fd diff cmp comm echo printf true
false test [ pwd cd which whereis type date basename dirname realpath readlink stat file du df free uptime
whoami id hostname uname ps top pgrep jq yq sha256sum md5sum nproc seq
""".split())


def _flat_flags(argv: list[str]) -> str:
    return "".join(a[1:] for a in argv[1:] if a.startswith("-") and not a.startswith("--"))


def _is_system_path(path: str) -> bool:
    clean = os.path.normpath(path) if path else path
    return any(clean == p or clean.startswith(p.rstrip("/") + "/") for p in SYSTEM_PATHS if p != "/") or clean == "/"


@condition("secrets_exposure", "security", "critical", pure=True, write_or_exec=True)
def secrets_exposure(ctx, threshold):
    """Fires when a command, or the new text of an edit, contains a secret from
    the curated patterns (``core/base/secrets.py``): AWS keys, GitHub, GitLab,
    Slack, OpenAI, Anthropic, Google and Stripe tokens, private key blocks,
    credentials in URLs, password/token/api-key assignments and JWTs. The
    description names the kinds, never the secret."""
    from leash.core.base.secrets import find_secrets

    kinds: list[str] = []
    for text in ctx.texts():
        kinds += [k for k in find_secrets(text) if k not in kinds]
    if not kinds:
        return None
    return Finding(f"Credentials would be exposed in commands or changes: {', '.join(kinds)}")


def _chmod_elevates(argv: list[str]) -> bool:
    modes = [a for a in argv[1:] if not a.startswith("-")]
    mode, paths = (modes[0], modes[1:]) if modes else ("", [])
    return bool(_SETUID.match(mode)) or (bool(_WORLD_WRITABLE.match(mode)) and any(_is_system_path(p) for p in paths))


def _chown_to_root(argv: list[str]) -> bool:
    owner = next((a for a in argv[1:] if not a.startswith("-")), "")
    return owner.split(":")[0] in ("root", "0") or owner in (":root", ":0")


def _privileged_container(argv: list[str]) -> bool:
    if not any(a in argv for a in ("run", "create", "exec")):
        return False
    joined = " ".join(a for a in argv if len(a) <= MAX_PATH_CHARS)
    return ("--privileged" in argv or re.search(r"--cap-add[= ](?:ALL|SYS_ADMIN)", joined) is not None
            or re.search(r"--(?:pid|userns)[= ]host", joined) is not None
            or re.search(r"(?:-v|--volume)[= ](?:/:|/var/run/docker\.sock)", joined) is not None)


_ELEVATING = {"chmod": _chmod_elevates, "chown": _chown_to_root, "chgrp": _chown_to_root,
              "docker": _privileged_container, "podman": _privileged_container}


def _elevation(command) -> str | None:
    """Why one command runs with more power than the agent has, or None."""
    argv, program = command.argv, command.program
    line = " ".join(argv)[:MAX_SHOWN]
    elevated = [w for w in command.via if w in _AS_ROOT]
    if elevated:
        return f"{elevated[0]} {line}"
    if program in _PRIVILEGE_PROGRAMS or program == "sudo":
        return line
    judge = _ELEVATING.get(program)
    return line if judge is not None and len(argv) > 1 and judge(argv) else None


@condition("privilege_escalation", "security", "critical", pure=True, write_or_exec=True)
def privilege_escalation(ctx, threshold):
    """Fires when a command would run with more power than the agent has: it
    runs behind sudo/doas/pkexec/runuser or is su, visudo, setcap, passwd,
    usermod and the like; sets setuid/setgid bits (chmod 4755, u+s); makes a
    system path world-writable (chmod 777/o+w/a+w on /, /etc, /usr, ...);
    hands ownership to root (chown root); starts a privileged container
    (docker --privileged, --cap-add ALL/SYS_ADMIN, --pid=host, a mount of / or
    the docker socket); pipes a download into a shell run as root (curl ... |
    sudo sh, sudo bash -c "$(curl ...)"). Acting on leash itself is
    ``supervisor_tampering``'s."""
    found = [f for command in ctx.simple_commands() if (f := _elevation(command))]
    found += _downloads_run_as_root(ctx.tool_call())
    if not found:
        return None
    return Finding(f"Operation requires elevated permissions: {'; '.join(dict.fromkeys(found))}")


def _downloads_run_as_root(call) -> list[str]:
    """A download piped into a shell run as root, or fed to one from ``$(...)``/``<(...)``."""
    found: list[str] = []
    if not any(w in _AS_ROOT for c in call.commands for w in c.via):
        return found  # (no shell runs as root)
    downloads = {c.within for c in call.commands if c.program in _DOWNLOADERS and c.within}
    for pipeline in call.pipelines():
        for index, command in enumerate(pipeline):
            as_root = command.program in _SHELLS and any(w in _AS_ROOT for w in command.via)
            if not as_root:
                continue
            piped = any(c.program in _DOWNLOADERS for c in pipeline[:index])
            if piped or any(ident in downloads for ident in command.feeds):
                found.append(f"download piped into a root shell: {' '.join(command.via)} "
                             f"{' '.join(command.argv)}"[:160])
    return found


_STORAGE_CLIS = frozenset({"aws", "gsutil", "gcloud", "az", "s3cmd", "rclone"})


def _remote_target(argv: list[str]) -> bool:
    for word in argv[1:]:
        if word.startswith("-"):
            continue
        if re.match(r"^(?:[\w.-]+@)?[\w.-]+:(?!//)", word) and not _LOOPBACK.search(word.split(":")[0] + ":"):
            return True
        if re.match(r"^[a-z]+://", word) and not _LOOPBACK.search(word):
            return True
    return False


def _reads_sensitive(command) -> bool:
    argv = command.argv
    files = [a for a in argv[1:] if not a.startswith("-") and len(a) <= MAX_PATH_CHARS] + \
        [t for op, t in command.redirects if "<" in op and len(t) <= MAX_PATH_CHARS]
    return (command.program in _READERS or bool(command.redirects)) and \
        any(_SENSITIVE_FILES.search(f.lstrip("@")) for f in files)


def _uploads(command) -> str | None:
    argv, program = command.argv, command.program
    if program == "curl":
        sends = any(a in ("-T", "--upload-file") for a in argv) or \
            any(a.startswith("@") or "=@" in a or a.startswith("-d@") for a in argv[1:])
        return "upload" if sends and _remote_target(argv) else None
    if program in ("scp", "rsync", "sftp") and _remote_target(argv):
        local = [a for a in argv[1:] if not a.startswith("-") and ":" not in a]
        return "copy to a remote host" if local and _remote_target([program, argv[-1]]) else None
    return None


def _exposures(command) -> list[str]:
    """How one command risks exposing sensitive data (see ``data_exposure``)."""
    argv, program = command.argv, command.program
    line = " ".join(argv)[:MAX_SHOWN]
    if _reads_sensitive(command):
        return [f"sensitive file: {line}"]
    found = []
    upload = _uploads(command)
    if upload:
        found.append(f"{upload}: {line}")
    if program in _STORAGE_CLIS and _PUBLIC_ACL.search(" ".join(a for a in argv if len(a) <= MAX_PATH_CHARS)):
        found.append(f"public access: {line}")
    return found


@condition("data_exposure", "security", "high", pure=True, write_or_exec=True)
def data_exposure(ctx, threshold):
    """Fires when a command risks exposing sensitive data: it reads, copies or
    encodes a sensitive file (SSH/TLS private keys, ``.env`` files,
    ``/etc/shadow``, ``.netrc``, ``.pgpass``, cloud and kube credentials,
    ``secrets.*``); it uploads a local file to a host that is not loopback
    (``curl -T``/``-F @``/``-d @``, ``scp``/``rsync`` to ``host:``); it pipes a
    database dump or the environment (``pg_dump``, ``mysqldump``, ``env``,
    ``printenv``) into a network command; or it makes storage public
    (``public-read`` ACLs, ``allUsers``)."""
    found = [f for command in ctx.simple_commands() for f in _exposures(command)]
    found += _dumps_sent(ctx.tool_call())
    if not found:
        return None
    return Finding(f"Risk of exposing sensitive data: {'; '.join(dict.fromkeys(found))}")


def _dumps_sent(call) -> list[str]:
    """A database dump or the environment piped into a network command, or
    handed to one through ``$(...)`` (``curl -d "$(env)" host``)."""
    found: list[str] = []
    if not any(c.program in _DUMPERS for c in call.commands):
        return found  # (both ways below start from a dump)
    dumped = {c.within for c in call.commands if c.program in _DUMPERS and c.within}
    for pipeline in call.pipelines():
        programs = [c.program for c in pipeline]
        if any(p in _DUMPERS for p in programs[:-1]) and any(p in _SENDERS for p in programs[1:]):
            found.append("dump sent over the network: " + " | ".join(" ".join(c.argv)[:60] for c in pipeline))
    for command in call.commands:
        if command.program in _SENDERS and any(ident in dumped for ident in command.feeds):
            found.append(f"dump sent over the network: {' '.join(command.argv)[:120]}")
    return found


@condition("unknown_commands", "security", "medium", pure=True, write_or_exec=True)
def unknown_commands(ctx, threshold):
    """Fires when a command runs a program that is not on the list of
    programs with well-known effects (``KNOWN_PROGRAMS`` in
    ``core/policy/halts/conditions/security.py``, extended by the threshold's
    ``allow`` list). A script inside the working tree (``./build.sh``,
    ``bin/tool``) counts as the project's own and is known."""
    allowed = KNOWN_PROGRAMS | set(threshold.get("allow") or ())
    unknown: list[str] = []
    for command in ctx.simple_commands():
        if not command.argv:
            continue
        word = command.argv[0]
        if "=" in word or word.startswith("$"):
            continue
        if "/" in word and not os.path.isabs(word) and ".." not in word.split("/"):
            continue  # the project's own script
        if command.program not in allowed and word not in allowed and command.program not in unknown:
            unknown.append(command.program)
    if not unknown:
        return None
    return Finding(f"Commands with unclear effects: {', '.join(unknown)}")
