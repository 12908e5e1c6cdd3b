"""What counts as private in a training log, as detectors that find spans of text.

Three families:

- tokens (cloud and hub credentials, keys, generic high-entropy secrets): Yelp's
  detect-secrets plugins where it has one (AWS, GitHub, GitLab, JWT, Slack, Stripe, OpenAI,
  PyPI, npm, SendGrid, Twilio, Azure, Discord, Basic-Auth URLs, quoted high-entropy strings),
  and our own patterns for what it lacks (Hugging Face ``hf_``, GitHub ``github_pat_``, GCP
  API keys / OAuth tokens / service-account keys, W&B API keys, PEM private-key bodies, the
  value of ``password=`` / ``token:`` assignments, unquoted high-entropy tokens);
- identities found by their shape anywhere: e-mail, IPv4 and IPv6 addresses, fully
  qualified host names;
- identities found by where they stand (contexts): a host in NCCL's ``host:pid:tid [dev]``
  prefix, torchrun's ``host :`` record line, ``[host]:port``, ``MASTER_ADDR=``, SLURM's
  ``srun: error: host: task``, a pdsh/DeepSpeed ``host: `` prefix; a user name in
  ``/home/<user>/`` and its kin; job ids (SLURM, Kubernetes pod names) when asked for.

A detector yields ``(start, end, kind, value)`` for the exact text to replace. Which words of
a context are replaced everywhere else too (a host name learned from an NCCL prefix, seen
again in a free-text message) is the redactor's decision (``redactor.py``).
"""

from __future__ import annotations

import ipaddress
import math
import re
import string
from collections.abc import Iterator

from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from ..ingest.prefix import sniff_dialect

Span = tuple[int, int, str, str]  # start, end, kind, the text replaced

# detect-secrets' regex plugins, by the kind our pseudonyms name. Only their
# ``analyze_string`` is used: it runs their patterns and nothing else (the ``analyze_line``
# path reads global settings and may try to verify a key over the network).
_AWS_NEEDLES = ("A3T", "ABIA", "ACCA", "AKIA", "ASIA", "aws", "AWS", "Aws")
_GH_NEEDLES = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")
# (kind, plugin, literals one of which its patterns need, or a quick pattern that must be
# found first: a text without them is skipped; several of the plugins' own patterns try
# every position of the text)
_DS_PLUGINS = (
    ("aws-key", AWSKeyDetector(), _AWS_NEEDLES),
    ("github-token", GitHubTokenDetector(), _GH_NEEDLES),
    ("gitlab-token", GitLabTokenDetector(), re.compile(r"gl[a-z]{1,7}-|GR1348941")),
    ("jwt", JwtTokenDetector(), ("eyJ",)),
    ("slack-token", SlackDetector(), ("xox", "XOX", "Xox", "hooks.slack")),
    ("stripe-key", StripeDetector(), ("k_live_",)),
    ("openai-key", OpenAIDetector(), ("T3BlbkFJ",)),
    ("pypi-token", PypiTokenDetector(), ("pypi-",)),
    ("npm-token", NpmDetector(), ("_authToken",)),
    ("sendgrid-key", SendGridDetector(), ("SG.",)),
    ("twilio-key", TwilioKeyDetector(), re.compile(r"(?:AC|SK)[a-z0-9]{32}")),
    ("azure-key", AzureStorageKeyDetector(), ("AccountKey=",)),
    ("discord-token", DiscordBotTokenDetector(), re.compile(r"\.[a-zA-Z\d_-]{6}\.[a-zA-Z\d_-]{27}")),
    ("telegram-token", TelegramBotTokenDetector(), re.compile(r":[0-9A-Za-z_-]{35}")),
    ("mailchimp-key", MailchimpDetector(), re.compile(r"-us\d")),
    ("artifactory-key", ArtifactoryDetector(), re.compile(r"(?:AKC|AP[\dA-F])[a-zA-Z0-9]{8}")),
    ("password", BasicAuthDetector(), ("://",)),
)
_B64 = Base64HighEntropyString()  # limit 4.5 bits a character, as detect-secrets' default
_HEX = HexHighEntropyString()  # limit 3.0
_QUOTED_MIN = 20  # quoted strings shorter than this are words, not keys
# a literal a plugin found may be the head of a longer token (detect-secrets' JWT pattern
# stops after the payload): the whole token is replaced
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-+/=.]*")

# what detect-secrets has no plugin for
_OWN_TOKENS = (  # (kind, pattern, literals it needs); a token may not follow a letter or digit
    ("hf-token", re.compile(r"(?:hf|api_org)_[A-Za-z0-9]{30,}"), ("hf_", "api_org_")),
    ("github-token", re.compile(r"github_pat_[A-Za-z0-9_]{20,}"), ("github_pat_",)),
    ("github-token", re.compile(r"gh[pousr]_[A-Za-z0-9_]{30,}"), _GH_NEEDLES),
    ("gcp-key", re.compile(r"AIza[0-9A-Za-z_\-]{35}"), ("AIza",)),
    ("gcp-token", re.compile(r"ya29\.[0-9A-Za-z_\-.]{20,}"), ("ya29.",)),
    ("aws-key", re.compile(r"(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])"), _AWS_NEEDLES[:5]),
)
_WANDB = re.compile(
    r"(?i)(?:WANDB_API_KEY|wandb[_ ]api[_ ]key|api\.wandb\.ai\S*|wandb login(?: --relogin)?(?: --host \S+)?)"
    r"[\"']?\s*[=: ]\s*[\"']?(?P<v>[A-Za-z0-9_\-]{32,})"
)
_BEARER = re.compile(r"(?i)\bBearer\s+(?P<v>[A-Za-z0-9._~+/\-]{16,}=*)")
# `password=...`, `"token": "..."`, `aws_secret_access_key = ...`, `private_key_id: ...`
_ASSIGNED = re.compile(  # run on the text with ASCII letters lowered (same offsets): (?i) is slow
    r"(?:passw(?:or)?d|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key[_-]?id|auth|credentials?)(?:[_-]?(?:key|id|token|value))?[\"']?[ \t]*(?:=|:=|:|=>)[ \t]*"
    r"(?:[\"'](?P<q>[^\"'\s]{8,})[\"']|(?P<v>[^\s\"',;{}()\[\]<>]{8,}))"
)
_ASSIGNED_NEEDLES = ("pass", "pwd", "secret", "token", "key", "auth", "credential", "PASS", "PWD", "SECRET", "TOKEN", "KEY",
                     "AUTH", "CREDENTIAL", "Pass", "Secret", "Token", "Key", "Auth")
_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_PLACEHOLDER = re.compile(r"(?i)^(?:none|null|true|false|\*+|x+|\.+|redacted-.*|<.*>|\$\{?\w+\}?|%\(.*|\{.*\})$")
_PEM = re.compile(
    r"(?P<begin>-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)(?P<body>(?:\\n|\\r|\s|[A-Za-z0-9+/=:,\-])*?)"
    r"(?=-----END [A-Z0-9 ]*PRIVATE KEY-----|[^A-Za-z0-9+/=\s\\:,\-]|\Z)"
)
# an unquoted token that is a secret by its randomness alone: base64/base62 of 24+ characters
# with upper and lower case and digits, or 32+ hex digits
_BARE = re.compile(r"(?<![\w+/=.\-])[A-Za-z0-9+/_\-]{24,}={0,2}(?![\w+/=\-])")

# -- identities by shape ---------------------------------------------------------------------
_EMAIL_AT = re.compile(r"@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.(?P<tld>[A-Za-z]{2,})(?![\w-])")
_EMAIL_LOCAL = re.compile(r"(?<![\w.%+-])[A-Za-z0-9._%+-]+\Z")
_FILE_SUFFIXES = {
    "py", "pyc", "so", "cpp", "cc", "cu", "cuh", "hpp", "json", "yaml", "yml", "txt", "log", "sh", "pt", "pth", "bin",
    "md", "html", "csv", "gz", "zst", "pkl", "out", "err", "cfg", "ini", "toml", "whl", "tar", "zip", "safetensors",
}
_IPV4 = re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?![\w]|\.\d)")  # not after [\w.]: checked in code
_FULL_V6 = re.compile(r"[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:[0-9A-Fa-f]{1,4}:")
_IPV6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
# host names: three labels or more under a common top-level domain, or two under the
# private suffixes of clusters and clouds (node01.internal)
_TLDS = (
    "com|net|org|edu|gov|mil|io|ai|co|cn|de|uk|fr|jp|kr|hu|ru|in|us|ca|au|nl|ch|se|it|es|pl|br|tw|sg|il|fi|no|dk|at|be|cz|"
    "cloud|dev|app|tech|science"
)
_FQDN = re.compile(
    r"(?<![\w@.\-/])(?P<h>[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
    rf"(?:\.[A-Za-z0-9-]+\.(?:{_TLDS})|\.(?:internal|local|localdomain|lan|corp|cluster|intra|svc|home|hpc)))(?![\w\-]|\.[A-Za-z0-9])"
)
_EC2 = re.compile(r"(?<![\w.\-])ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}(?:\.[A-Za-z0-9\-]+)*(?![\w\-])")  # EC2's names
_PUBLIC = re.compile(
    r"(?i)(?:^|\.)(?:pytorch\.org|github\.com|githubusercontent\.com|github\.io|huggingface\.co|nvidia\.com|python\.org|"
    r"pypi\.org|readthedocs\.io|google\.com|googleapis\.com|microsoft\.com|amazon\.com|anaconda\.org|conda\.io|"
    r"wandb\.ai|deepspeed\.ai|lightning\.ai|stackoverflow\.com|ubuntu\.com|debian\.org|kernel\.org|docker\.io|"
    r"docker\.com|nccl\.com|example\.com|example\.invalid|w3\.org|mozilla\.org|apache\.org)$"
)

# -- identities by context -------------------------------------------------------------------
_NOT_NAMES = {
    "localhost", "localhost.localdomain", "none", "null", "unknown", "nil", "true", "false", "ip", "host", "hostname",
    "node", "port", "master", "worker", "default", "local", "self", "any", "all", "user", "users", "username", "xxx",
    "yyy", "name", "your_name", "youruser", "me", "home", "root", "env", "tmp", "data", "shared", "share", "opt", "lib",
}
_HOST_CONTEXTS = (
    # NCCL: "gpu-node-3:1234:5678 [0] NCCL INFO ..." (ingest/prefix.py's _P_NCCL)
    (("NCCL",), "tail", re.compile(r":\d+:\d+ \[\d+\] "), re.compile(r"(?<![\w.\-])[A-Za-z0-9][\w.\-]*\Z")),
    # torchrun's failure record ("  host      : node-3"), and its kin
    (("host", "Host", "HOST", "node", "Node"), "lower", re.compile(
        r"(?m)^[ \t]*(?:\[[^\]\n]*\]:?[ \t]*)*(?:host|hostname|host_name|nodename|node_name)[ \t]*[:=][ \t]*['\"]?"
        r"(?P<h>[a-z0-9][\w.\-]*)['\"]?[ \t]*$"), None),
    (("addr", "ADDR", "rdzv", "HOST"), "lower", re.compile(
        r"(?:master_addr|rdzv_endpoint|rdzv-endpoint|torchelastic_\w*host\w*)['\"]?[ \t]*[:=][ \t]*['\"]?(?P<h>[a-z][\w.\-]*)"
        r"|--master[_-]addr[ =](?P<h2>[a-z][\w.\-]*)"), None),
    # c10d sockets: "[node-3]:29500", "node-3:29400" (a name with a digit, a port of 4-5 digits)
    (("]:",), None, re.compile(r"\[(?P<h>(?!default\d|rank\d)[A-Za-z][\w.\-]*)\]:\d{2,5}(?![\d\-:.])"), None),
    ((":",), "tail", re.compile(r":\d{4,5}(?![\d\-:.])"),
     re.compile(r"(?<![\w.\-/@])(?!rank\d|default\d)[A-Za-z][A-Za-z\-]*\d[\w\-]*(?:\.[\w\-]+)*\Z")),
    # SLURM
    (("srun",), None, re.compile(r"srun: error: (?P<h>[\w.\-]+): tasks? "), None),
    (("STEP",), None, re.compile(r"STEP \d+(?:\.\w+)? ON (?P<h>[\w.\-]+) CANCELLED"), None),
    (("NodeList", "BatchHost", "SLURM"), None,
     re.compile(r"(?:NodeList|BatchHost|SLURMD_NODENAME|SLURM_NODELIST|SLURM_JOB_NODELIST)=(?P<h>[\w.\-\[\],]+)"), None),
    # shell prompts: alice@gpu-node-3:~$
    (("@",), None, re.compile(r"@(?P<h>[A-Za-z][\w.\-]*):[~/]"), None),
)
_USER_CONTEXTS = (
    (("/home", "/Users", "/mnt/", "/data/", "/usr/", "/export/", "/fsx/", "/scratch/", "/nfs/"),
     re.compile(r"(?:/home|/Users|/mnt/home|/data/home|/usr/home|/export/home|/fsx/home|/scratch|/nfs/home)/(?P<u>[^/\s'\"\\:;,()\[\]<>]+)")),
    (("Users\\", "users\\", "USERS\\"), re.compile(r"(?i)\b[A-Z]:\\+Users\\+(?P<u>[^\\\s'\"]+)")),
    (("~",), re.compile(r"(?<![\w/])~(?P<u>[a-z_][\w\-]*)/")),
    (("USER", "LOGNAME"), re.compile(r"(?:USER|LOGNAME|USERNAME|SUDO_USER)=['\"]?(?P<u>[A-Za-z_][\w.\-]*)")),
)
_PROMPT = re.compile(r"@[A-Za-z][\w.\-]*:[~/]")
_PROMPT_USER = re.compile(r"(?<![\w.\-])[a-z_][\w\-]*\Z")
_JOB_CONTEXTS = (
    ("job", re.compile(r"\b(?:SLURM_JOB_ID|SLURM_JOBID|SLURM_ARRAY_JOB_ID|JobId|JOB_ID|job_id)['\"]?\s*[=:]\s*['\"]?(?P<j>\d+)")),
    ("job", re.compile(r"\bslurm-(?P<j>\d+)(?:_\d+)?\.(?:out|err)\b")),
    ("job", re.compile(r"\b(?:STEP|JOB) (?P<j>\d+)(?:\.\w+)? ON ")),
    ("job", re.compile(r"\bjob (?P<j>\d{3,})\b")),
    ("pod", re.compile(r"\[pod/(?P<j>[^/\]\s]+)/")),
    ("pod", re.compile(r"\bpods?[/ ](?P<j>[a-z0-9](?:[a-z0-9\-]*[a-z0-9])?-[a-z0-9]{5}|[a-z0-9][a-z0-9\-]*-(?:worker|master|launcher)-\d+)\b")),
)


def entropy(s: str, charset: str) -> float:
    """Shannon entropy in bits per character (detect-secrets' measure)."""
    n = len(s)
    total = 0.0
    for ch in set(s):
        if ch in charset:
            p = s.count(ch) / n
            total -= p * math.log2(p)
    return total


_WORDISH = re.compile(r"[A-Z]?[a-z]{3,}")


# a C++ symbol's mangled name (Itanium ABI: _ZN3c105ErrorC2..., _ZNK2at6Tensor7optionsEv), as a
# loader's "undefined symbol:" line prints it: identifiers with their lengths, not a key
_MANGLED = re.compile(r"_Z(?:N|K|L|S|T|\d)\w*?\d+[A-Za-z_]")


def _is_random(tok: str) -> bool:
    """A token whose characters look drawn at random: a key, not a word or a path."""
    core = tok.rstrip("=")
    if _MANGLED.match(core):
        return False
    if len(core) >= 32 and re.fullmatch(r"[0-9a-fA-F]+", core):
        return bool(re.search(r"\d", core)) and bool(re.search(r"[a-fA-F]", core)) and entropy(core, _HEX.charset) > _HEX.entropy_limit
    if not (re.search(r"[a-z]", core) and re.search(r"[A-Z]", core) and re.search(r"\d", core)):
        return False
    if "/" in core and any(len(p) > 2 and p.isalpha() and p.islower() for p in core.split("/")):
        return False  # a path with words in it
    if len(re.findall(r"[_/\-]", core)) >= 2 and sum(len(w) for w in _WORDISH.findall(core)) > 0.5 * len(core):
        return False  # words joined: an identifier (HorovodBroadcast_InceptionV3_...), not a key
    return entropy(core, _B64.charset) > _B64.entropy_limit


def secrets(text: str) -> Iterator[Span]:
    """Credentials and keys."""
    for m in _PEM.finditer(text) if "PRIVATE KEY" in text else ():
        if m["body"].strip(" \\n\r\t"):
            yield m.start("body"), m.end("body"), "private-key", m["body"]
    for kind, rx, needles in _OWN_TOKENS:
        if _any_in(needles, text):
            for m in rx.finditer(text):
                if not (m.start() and text[m.start() - 1].isalnum()):
                    yield m.start(), m.end(), kind, m[0]
    for m in _BEARER.finditer(text) if "earer" in text else ():
        yield m.start("v"), m.end("v"), "secret", m["v"]
    for m in _WANDB.finditer(text) if _any_in(("wandb", "WANDB"), text) else ():
        yield m.start("v"), m.end("v"), "wandb-key", m["v"]
    for m in _ASSIGNED.finditer(_lowered(text)) if _any_in(_ASSIGNED_NEEDLES, text) else ():
        g = "q" if m["q"] is not None else "v"
        v = text[m.start(g):m.end(g)]
        code = _DOTTED.fullmatch(v) or text[m.end(g):m.end(g) + 1] == "("  # authkey=process.current_process()
        if not code and not _PLACEHOLDER.match(v) and (re.search(r"\d", v) or len(v) >= 16 or not v.isalpha()):
            yield m.start(g), m.end(g), "secret", v
    for kind, plugin, needles in _DS_PLUGINS:
        if needles and not _any_in(needles, text):
            continue
        for found in set(plugin.analyze_string(text)):
            if not found or found.startswith("REDACTED-") or "\n" in found:  # a line keeps its number
                continue
            for m in re.finditer(re.escape(found), text):
                end = _TOKEN_TAIL.match(text, m.end()).end()
                yield m.start(), end, kind, text[m.start():end]
    for plugin in (_B64, _HEX):
        for m in plugin.regex.finditer(text):
            v = m[2]
            if len(v) >= _QUOTED_MIN and not v.startswith("REDACTED-") and plugin.calculate_shannon_entropy(v) > plugin.entropy_limit and _is_random(v):
                yield m.start(2), m.end(2), "secret", v
    for m in _BARE.finditer(text):
        if _is_random(m[0]) and not m[0].startswith("REDACTED-"):
            yield m.start(), m.end(), "secret", m[0]


def _ip_ok(s: str) -> bool:
    try:
        ip = ipaddress.ip_address(s)
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_unspecified or ip.is_multicast or str(ip) == "255.255.255.255")


def shapes(text: str) -> Iterator[Span]:
    """E-mail, IP addresses, host names with a domain."""
    for m in _EMAIL_AT.finditer(text) if "@" in text else ():
        local = _tail(_EMAIL_LOCAL, text, m.start(), 80)
        if local is None:
            continue
        if m["tld"].lower() not in _FILE_SUFFIXES and m[0].lower() not in ("@example.invalid", "@example.com"):
            yield local.start(), m.end(), "email", text[local.start():m.end()]
    for m in _IPV4.finditer(text):
        if m.start() and (text[m.start() - 1].isalnum() or text[m.start() - 1] in "._"):
            continue
        if all(int(p) <= 255 for p in m[0].split(".")) and _ip_ok(m[0]):
            yield m.start(), m.end(), "ipv4", m[0]
    for m in _IPV6.finditer(text) if "::" in text or _FULL_V6.search(text) else ():
        s = m[0]
        if "::" not in s and s.count(":") < 7:
            continue  # 10:00:00 and its kin
        groups = [g for g in s.split(":") if g]
        if (len(groups) >= 3 or (s.startswith("fe80") and len(groups) >= 2)) and _ip_ok(s) and not s.lower().startswith("2001:db8:"):
            yield m.start(), m.end(), "ipv6", s
    for m in _EC2.finditer(text) if "ip-" in text else ():
        yield m.start(), m.end(), "host", m[0]
    for m in _FQDN.finditer(text):
        h = m["h"]
        if not _PUBLIC.search(h) and h.rsplit(".", 1)[-1].lower() not in _FILE_SUFFIXES and not re.fullmatch(r"[\d.]+", h):
            yield m.start("h"), m.end("h"), "host", h


def _name_ok(s: str) -> bool:
    return len(s) >= 2 and any(c.isalnum() for c in s) and not re.fullmatch(r"(?:default|rank)\d+", s) and s.lower() not in _NOT_NAMES and not s.startswith(("host-", "user-", "REDACTED-")) and not s.isdigit() \
        and "..." not in s and not s.startswith(("$", "<", "{", "%"))


def contexts(text: str, job_ids: bool = False) -> Iterator[Span]:
    """Host, user and job names by where they stand."""
    for needles, how, rx, tail in _HOST_CONTEXTS:
        if not _any_in(needles, text):
            continue
        for m in rx.finditer(_lowered(text) if how == "lower" else text):
            if how == "tail":  # the name is what stands right before the literal found
                t = _tail(tail, text, m.start())
                if t is None:
                    continue
                start, end = t.start(), t.end()
            else:
                g = "h" if m["h"] is not None else "h2"
                start, end = m.start(g), m.end(g)
            h = text[start:end].rstrip(".")
            if _name_ok(h) and not _looks_ip(h) and h.rsplit(".", 1)[-1].lower() not in _FILE_SUFFIXES:
                yield start, start + len(h), "host", h
    for needles, rx in _USER_CONTEXTS:
        if not _any_in(needles, text):
            continue
        for m in rx.finditer(text):
            u = m["u"]
            if _name_ok(u):
                yield m.start("u"), m.end("u"), "user", u
    for m in _PROMPT.finditer(text) if "@" in text else ():  # alice@gpu-node-3:~$
        t = _tail(_PROMPT_USER, text, m.start(), 64)
        if t is not None and _name_ok(t[0]):
            yield t.start(), t.end(), "user", t[0]
    if job_ids:
        for kind, rx in _JOB_CONTEXTS:
            for m in rx.finditer(text):
                if not m["j"].startswith(("job-", "pod-")):
                    yield m.start("j"), m.end("j"), kind, m["j"]


def _any_in(needles: "tuple[str, ...] | re.Pattern[str]", text: str) -> bool:
    """A cheap test first: most texts hold none of a pattern's literals."""
    if isinstance(needles, re.Pattern):
        return needles.search(text) is not None
    return any(n in text for n in needles)


_last_lowered: list = [None, None]


def _lowered(text: str) -> str:
    """``text`` with ASCII letters in lower case and every offset kept: case-insensitive
    patterns ((?i) alternations are slow in re) run on it, case-sensitively."""
    if _last_lowered[0] is text:
        return _last_lowered[1]
    low = text.lower()
    if len(low) != len(text):  # a character that lowers to two (İ): only ASCII then
        low = text.translate(_LOWER)
    _last_lowered[:] = [text, low]
    return low


def _tail(rx: "re.Pattern[str]", text: str, end: int, width: int = 200) -> "re.Match[str] | None":
    """``rx`` (ending in \\Z) matched on the text just before ``end``: a name found from the
    literal that follows it (``:pid:tid [dev]``, ``@``, ``:port``) rather than tried at
    every position of the text."""
    return rx.search(text, max(0, end - width), end)


def _looks_ip(s: str) -> bool:
    return bool(re.fullmatch(r"[\d.]+|[0-9A-Fa-f:]+", s))


def prefix_hosts(text: str) -> set[str]:
    """pdsh / DeepSpeed ``host: `` line prefixes, found the way the log reader finds them
    (its dialect sniffer on the first lines)."""
    return set(sniff_dialect(text.splitlines()[:200]).hosts)
